import { randomBytes } from 'node:crypto';
import { Metadata } from '@grpc/grpc-js';
import { AppError, newId, type CallContext, type Pool } from '@secsvc/shared';
import type { IdentityContext } from '../src/context';
import { closeIdentityTestDb, identityTestDb, type IdentityTestDb } from './support/db';
import { identityRpc } from './support/rpc';
import type { IdentityRpc } from '../src/rpc';

let t: IdentityTestDb;
let pool: Pool;
let ctx: IdentityContext;
let rpc: IdentityRpc;

/** The metadata a gateway sends with a report: who was refused, from where, how they authenticated. */
const call = (actor: Record<string, string> = {}): CallContext => {
  const metadata = new Metadata();
  for (const [k, v] of Object.entries({ 'x-client-ip': '203.0.113.9', 'x-user-agent': 'curl/8', ...actor })) metadata.set(k, v);
  // Each call its own trace (as the gRPC server gives it), which names its events.
  return { requestId: `req_ratelimit${newId('req').slice(-16)}`, metadata, traceId: randomBytes(16).toString('hex') };
};

beforeAll(async () => {
  t = await identityTestDb({ SERVER_SECRET: 'r'.repeat(40) });
  ({ pool, ctx } = t);
  rpc = identityRpc(ctx);
});

afterAll(() => closeIdentityTestDb(t));

const eventsOf = async (traceId: string) =>
  (await pool.query(`SELECT environment, payload FROM outbox WHERE event_type = 'rate_limit.exceeded' AND payload->>'traceId' = $1`, [traceId])).rows;

describe('rate limits', () => {
  it("hands the gateway an enterprise key's custom limit with its principal", async () => {
    const custom = await rpc.createApiKey({ environment: 'live', name: 'big', type: 'secret', plan: 'enterprise', rateLimit: 50_000 }, call());
    const plain = await rpc.createApiKey({ environment: 'live', name: 'small', type: 'secret', plan: 'pro' }, call());
    expect(await rpc.authenticateApiKey({ key: custom.key }, call())).toMatchObject({ plan: 'enterprise', rateLimit: 50_000 });
    expect((await rpc.authenticateApiKey({ key: plain.key }, call())).rateLimit).toBeUndefined();
  });

  it('records rate_limit.exceeded with the refused caller as actor and the ip and user agent as context', async () => {
    const keyId = newId('key');
    const c = call({ 'x-actor-id': keyId, 'x-actor-type': 'api_key', 'x-auth-method': 'api_key' });
    await rpc.reportRateLimitExceeded({ environment: 'test', subjectType: 'api_key', subjectId: keyId, limit: 100, windowSeconds: 60 }, c);
    const [row, ...more] = await eventsOf(c.traceId!);
    expect(more).toHaveLength(0);
    expect(row.environment).toBe('test');
    expect(row.payload).toMatchObject({
      type: 'rate_limit.exceeded',
      actor: { id: keyId, type: 'api_key' },
      target: { id: keyId, type: 'api_key' },
      context: { ip: '203.0.113.9', userAgent: 'curl/8' },
      result: 'failure',
    });
    expect(JSON.parse(row.payload.metadataJson)).toEqual({ authMethod: 'api_key', mfaUsed: false, limit: 100, windowSeconds: 60, subject: 'api_key' });
  });

  it('records an anonymous caller by its ip', async () => {
    const c = call();
    await rpc.reportRateLimitExceeded({ environment: 'live', subjectType: 'ip', subjectId: '', limit: 100, windowSeconds: 60 }, c);
    const [row] = await eventsOf(c.traceId!);
    expect(row.payload).toMatchObject({ actor: { type: 'anonymous' }, target: { id: '203.0.113.9', type: 'ip' } });
  });

  it('names every bad field and records nothing', async () => {
    const c = call();
    const err = await rpc.reportRateLimitExceeded({ environment: 'live', subjectType: 'robot', subjectId: 'x', limit: 0, windowSeconds: -1 }, c).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).details.map((d) => d.field)).toEqual(['subjectType', 'subjectId', 'limit', 'windowSeconds']);
    const wrongId = await rpc.reportRateLimitExceeded({ environment: 'live', subjectType: 'user', subjectId: newId('key'), limit: 5, windowSeconds: 60 }, c).catch((e: unknown) => e);
    expect((wrongId as AppError).details).toEqual([{ field: 'subjectId', message: 'must be a user_ id' }]);
    const badEnv = await rpc.reportRateLimitExceeded({ environment: 'prod', subjectType: 'ip', subjectId: '', limit: 5, windowSeconds: 60 }, c).catch((e: unknown) => e);
    expect((badEnv as AppError).details[0]!.field).toBe('environment');
    expect(await eventsOf(c.traceId!)).toHaveLength(0);
  });
});
