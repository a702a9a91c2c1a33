import { idTime, isId, newId } from './ids';

const BODY = /^[0-9abcdefghjkmnpqrstvwxyz]{26}$/;

// newId keeps module state (the last time used): ids asked for at an earlier `now` than a previous id are
// clamped to that previous time. Tests that pass `now` therefore use times later than anything made before.
let future = Date.now() + 86_400_000;
const laterTime = () => (future += 86_400_000);

describe('newId', () => {
  it('is the prefix, an underscore and 26 lower-case Crockford base32 characters', () => {
    for (const prefix of ['user', 'pol', 'log', 'exp', 'key', 'ses', 'req', 'evt', 'job'] as const) {
      const id = newId(prefix);
      expect(id.startsWith(`${prefix}_`)).toBe(true);
      expect(id.slice(prefix.length + 1)).toMatch(BODY);
      expect(id).toHaveLength(prefix.length + 1 + 26);
    }
  });

  it('is strictly increasing in string order for 10k ids made in a tight loop', () => {
    const ids: string[] = [];
    for (let i = 0; i < 10_000; i++) ids.push(newId('user'));
    for (let i = 1; i < ids.length; i++) {
      if (!(ids[i - 1]! < ids[i]!)) throw new Error(`id ${i} (${ids[i]}) does not sort after ${ids[i - 1]}`);
    }
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('stays strictly increasing when many ids share one millisecond', () => {
    const now = laterTime();
    const ids = Array.from({ length: 1000 }, () => newId('evt', now));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => idTime(id) === now)).toBe(true);
  });

  it('sorts ids made at a later time after ids made earlier', () => {
    const t1 = laterTime();
    const a = newId('pol', t1);
    const b = newId('pol', t1 + 1);
    const c = newId('pol', t1 + 3_600_000);
    expect(a < b).toBe(true);
    expect(b < c).toBe(true);
    // the time part alone orders them
    expect(a.slice(4, 14) < b.slice(4, 14)).toBe(true);
    expect(b.slice(4, 14) < c.slice(4, 14)).toBe(true);
  });

  it('never goes backwards when asked for an earlier time than the last id', () => {
    const t = laterTime();
    const a = newId('log', t);
    const b = newId('log', t - 10_000);
    expect(b > a).toBe(true);
  });
});

describe('isId', () => {
  const body = newId('user').slice(5);

  it('accepts an id of its prefix', () => {
    expect(isId('user', newId('user'))).toBe(true);
    expect(isId('ses', newId('ses'))).toBe(true);
    expect(isId('user', `user_${'0'.repeat(26)}`)).toBe(true);
    expect(isId('user', `user_${'z'.repeat(26)}`)).toBe(true);
  });

  it('rejects an id of another prefix', () => {
    expect(isId('user', `pol_${body}`)).toBe(false);
    expect(isId('key', newId('ses'))).toBe(false);
    expect(isId('user', `users_${body}`)).toBe(false);
    expect(isId('user', `user${body}`)).toBe(false);
    expect(isId('user', body)).toBe(false);
  });

  it('rejects a body of the wrong length', () => {
    expect(isId('user', `user_${body.slice(1)}`)).toBe(false);
    expect(isId('user', `user_${body}0`)).toBe(false);
    expect(isId('user', 'user_')).toBe(false);
  });

  it('rejects upper case', () => {
    expect(isId('user', `user_${body.toUpperCase()}`)).toBe(false);
    expect(isId('user', `user_A${body.slice(1)}`)).toBe(false);
    expect(isId('user', `USER_${body}`)).toBe(false);
  });

  it.each(['i', 'l', 'o', 'u'])('rejects the excluded letter %s', (letter) => {
    expect(isId('user', `user_${letter}${body.slice(1)}`)).toBe(false);
    expect(isId('user', `user_${body.slice(0, 25)}${letter}`)).toBe(false);
  });

  it('rejects other characters', () => {
    for (const ch of ['-', '_', ' ', '.', '\n', 'é']) {
      expect(isId('user', `user_${body.slice(0, 10)}${ch}${body.slice(11)}`)).toBe(false);
    }
  });
});

describe('idTime', () => {
  it('round-trips the millisecond time an id was made at', () => {
    for (let i = 0; i < 20; i++) {
      const t = laterTime() + i * 7;
      expect(idTime(newId('exp', t))).toBe(t);
    }
  });

  it('reads the time of the current clock', () => {
    const before = Date.now();
    const t = idTime(newId('req'));
    // the id is never earlier than its making (state from other tests may only push it later)
    expect(t).toBeGreaterThanOrEqual(before);
  });

  it('decodes the ULID reference time (01ARYZ6S41 = 1469918176385)', () => {
    expect(idTime('user_01aryz6s41tsv4rrffq69g5fav')).toBe(1469918176385);
  });
});
