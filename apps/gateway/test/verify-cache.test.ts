import { MemoryVerifyCache, type VerifyAnswer } from '../src/auth/verify-cache';
import { authCacheWithFakeStreams } from './support/fake-stream';

const answer = (sessionId: string, userId: string): VerifyAnswer => ({
  body: { data: { valid: true, user: { id: userId }, session: { id: sessionId } } },
  session: { sessionId, userId, expiresAt: Date.now() + 3_600_000 },
});

function setup() {
  const { cache: changes, streams } = authCacheWithFakeStreams();
  streams[0]!.push('ready');
  const cache = new MemoryVerifyCache(changes);
  const counted = (a: VerifyAnswer) => {
    const f = { calls: 0, fetch: async () => (f.calls++, a) };
    return f;
  };
  return { cache, stream: streams[0]!, counted };
}

describe('MemoryVerifyCache', () => {
  it('answers positive verifications from memory, never negative ones', async () => {
    const { cache, counted } = setup();
    const yes = counted(answer('ses_1', 'user_1'));
    const no = counted({ body: { data: { valid: false } } });
    for (let i = 0; i < 3; i++) await cache.get('live:sst_a', yes.fetch);
    for (let i = 0; i < 3; i++) await cache.get('live:sst_b', no.fetch);
    expect([yes.calls, no.calls]).toEqual([1, 3]);
  });

  it('drops an answer when its session or its user changes, or this gateway revoked the token', async () => {
    const { cache, stream, counted } = setup();
    const a = counted(answer('ses_a', 'user_a'));
    const b = counted(answer('ses_b', 'user_b'));
    const c = counted(answer('ses_c', 'user_c'));
    const d = counted(answer('ses_d', 'user_d'));
    for (const [key, f] of [['live:sst_a', a], ['live:sst_b', b], ['live:sst_c', c], ['live:sst_d', d]] as const) await cache.get(key, f.fetch);
    stream.push('changed', 'ses_a');
    stream.push('changed', 'user_b');
    await cache.dropToken('live:sst_c');
    await cache.dropUser('user_d');
    for (const [key, f] of [['live:sst_a', a], ['live:sst_b', b], ['live:sst_c', c], ['live:sst_d', d]] as const) await cache.get(key, f.fetch);
    expect([a.calls, b.calls, c.calls, d.calls]).toEqual([2, 2, 2, 2]);
  });

  it('does not keep an answer fetched while a change arrived', async () => {
    const { cache, stream, counted } = setup();
    const later = counted(answer('ses_r', 'user_r'));
    await cache.get('live:sst_r', async () => {
      stream.push('changed', 'ses_r'); // the revocation overtakes the answer
      return answer('ses_r', 'user_r');
    });
    await cache.get('live:sst_r', later.fetch);
    expect(later.calls).toBe(1);
  });
});
