/** The request's W3C trace context (tracing off, the default): continued or started, answered, sent to the services. */
import { createLogger } from '@secsvc/shared';
import { AuthCache } from '../src/auth/auth-cache';
import { UserCache } from '../src/auth/user-cache';
import { withEmail } from '../src/routes/serve';
import { FakeStream } from './support/fake-stream';
import { call, startGateway, type TestGateway } from './support/gateway';

let gw: TestGateway;
/** A gateway with TRACE_CONTINUE_INCOMING=true. */
let trusting: TestGateway;
beforeAll(async () => {
  gw = await startGateway();
  trusting = await startGateway({ extra: { continueIncomingTrace: true } });
});
afterAll(async () => {
  await gw.close();
  await trusting.close();
});
beforeEach(() => {
  gw.fake.reset();
  trusting.fake.reset();
});

const INCOMING = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const createUser = (headers: Record<string, string> = {}, on = gw) => call(on, 'POST', '/v1/users', { json: { email: 'ada@example.com', name: 'Ada' }, headers });

describe('traceparent', () => {
  it('by default starts its own trace for a caller with a traceparent: the caller chooses neither the trace id nor sampling', async () => {
    const res = await createUser({ traceparent: INCOMING, 'x-request-id': 'req_tracetest00000000' });
    expect(res.status).toBe(201);
    const answered = res.headers.get('traceparent') ?? '';
    expect(answered).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(answered.slice(3, 35)).not.toBe(INCOMING.slice(3, 35));
    expect(gw.fake.callsOf('createUser')[0]!.options!.headers!.traceparent).toBe(answered);
    // An unsampled caller cannot hide its request from tracing either.
    const hidden = await createUser({ traceparent: INCOMING.replace(/-01$/, '-00') });
    expect(hidden.headers.get('traceparent')).toMatch(/-01$/);
  });

  it("with TRACE_CONTINUE_INCOMING continues a valid incoming traceparent: answered, and sent with the service call (x-request-id stays its own)", async () => {
    const res = await createUser({ traceparent: INCOMING, 'x-request-id': 'req_tracetest00000000' }, trusting);
    expect(res.status).toBe(201);
    expect(res.headers.get('traceparent')).toBe(INCOMING);
    expect(res.headers.get('x-request-id')).toBe('req_tracetest00000000');
    const [sent] = trusting.fake.callsOf('createUser');
    expect(sent!.options!.headers!.traceparent).toBe(INCOMING);
    expect(sent!.options!.requestId).toBe('req_tracetest00000000');
    // The trace id is continued, the sampled flag is the gateway's own decision (always_on here).
    const unsampled = await createUser({ traceparent: INCOMING.replace(/-01$/, '-00') }, trusting);
    expect(unsampled.headers.get('traceparent')).toBe(INCOMING);
  });

  it.each([
    ['none', {}],
    ['an invalid one', { traceparent: '00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01' }],
    ['a request id', { traceparent: 'req_tracetest00000000' }],
  ])('starts a new trace for %s, on every answer (errors too)', async (_what, headers: Record<string, string>) => {
    const res = await createUser(headers);
    const answered = res.headers.get('traceparent') ?? '';
    expect(answered).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(gw.fake.callsOf('createUser')[0]!.options!.headers!.traceparent).toBe(answered);
    const other = await createUser(headers);
    expect(other.headers.get('traceparent')?.slice(3, 35)).not.toBe(answered.slice(3, 35));
    const refused = await call(gw, 'GET', '/v1/users/user_x', { auth: false, headers });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('traceparent')).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
  });
});

describe('calls made on behalf of a request', () => {
  it("looks a JWT user's email up inside the request's trace", async () => {
    const stream = new FakeStream();
    const auth = new AuthCache(() => stream, createLogger('test', 'silent'), 60_000, 100, 60_000);
    auth.start();
    stream.push('ready');
    const sent: { headers?: Record<string, string> }[] = [];
    const identity = {
      getUser: async (_req: unknown, options: { headers?: Record<string, string> }) => {
        sent.push(options);
        return { roles: ['role_x'], email: 'ada@example.com' } as never;
      },
    };
    const principal = { type: 'user', id: 'user_1', credentialId: 'jti_1', keyType: 'jwt', environment: 'live', plan: 'user' } as const;
    const req = { requestId: 'req_tracetest00000000', traceparent: INCOMING } as never;
    const withMail = await withEmail(principal, req, identity as never, 1000, new UserCache(auth, 60_000, 100));
    expect(withMail.email).toBe('ada@example.com');
    expect(sent).toEqual([expect.objectContaining({ requestId: 'req_tracetest00000000', headers: { traceparent: INCOMING } })]);
    auth.stop();
  });
});
