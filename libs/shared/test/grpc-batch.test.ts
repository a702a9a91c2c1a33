import { isDeepStrictEqual } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import { batchMethods, descriptorSets, identity, serviceNames } from '@secsvc/proto';
import { currentRequestId } from '../src/context';
import { AppError } from '../src/errors';
import { BATCH_MAX, createClient, promiseClient } from '../src/grpc/client';
import { startGrpcServer, type CallContext, type RunningGrpcServer } from '../src/grpc/server';
import { newId } from '../src/ids';
import { createLogger } from '../src/logger';
import { Metrics, parseMetricsText } from '../src/metrics';
import { parseTraceparent, traceIdOf, withSpan } from '../src/tracing';

// Unary calls coalesced into their batch method (promiseClient's `batches`, ServiceRegistration.batches), over
// a real gRPC server and client: Token and TokenBatch of the identity service with a test implementation.

interface Seen {
  scope: string;
  requestId: string;
  fromContext: string | undefined;
  ip: string | undefined;
}

const seen: Seen[] = [];
/** The trace id of each item's call, by scope. */
const traces = new Map<string, string>();
let gate: Promise<void> = Promise.resolve();
let openGate: () => void = () => undefined;

function answer(req: identity.TokenRequest): identity.TokenResponse {
  return { error: '', errorDescription: '', status: 0, retryAfterSeconds: 0, accessToken: `at-${req.scope}`, tokenType: 'Bearer', expiresIn: 60, refreshToken: '', idToken: '', scope: req.scope };
}

/** Token's behaviour is chosen by the grant type: ok, invalid (AppError with details), boom (plain Error), slow (waits for the gate). */
async function token(req: identity.TokenRequest, ctx: CallContext): Promise<identity.TokenResponse> {
  seen.push({ scope: req.scope, requestId: ctx.requestId, fromContext: currentRequestId(), ip: ctx.metadata.get('x-client-ip')[0]?.toString() });
  traces.set(req.scope, traceIdOf(ctx));
  if (req.grantType === 'invalid') throw AppError.invalid([{ field: 'scope', message: `no scope ${req.scope}` }], 'The request is invalid');
  if (req.grantType === 'boom') throw new Error('ERROR: relation "oauth_grants" is locked by pid 4242');
  if (req.grantType === 'limited') throw new AppError('rate_limited', 'Too many requests', [], 7);
  if (req.grantType === 'slow') await gate;
  return answer(req);
}

const tokenRequest = (grantType: string, scope: string): identity.TokenRequest => ({
  grantType,
  scope,
  code: '',
  redirectUri: '',
  codeVerifier: '',
  refreshToken: '',
  clientId: 'c',
  clientSecret: '',
  clientAuthMethod: 'none',
  repeatedParams: [],
});

function implementationWith(impl: Record<string, unknown>) {
  const missing = async () => {
    throw AppError.notFound('RPC in this test');
  };
  const batches: string[] = Object.values(batchMethods.identity);
  return Object.fromEntries(
    Object.keys(identity.IdentityServiceService)
      .filter((k) => !batches.includes(k))
      .map((k) => [k, impl[k] ?? missing]),
  ) as Record<string, () => Promise<unknown>>;
}

const metrics = new Metrics('batch-test');
let server: RunningGrpcServer;
let raw: identity.IdentityServiceClient;
let client: ReturnType<typeof promiseClient<identity.IdentityServiceClient>>;

function startServer(m: Metrics, batched: boolean): Promise<RunningGrpcServer> {
  return startGrpcServer({
    host: '127.0.0.1',
    port: 0,
    logger: createLogger('test', 'silent'),
    metrics: m,
    descriptorSets,
    services: [
      {
        name: serviceNames.identity,
        definition: identity.IdentityServiceService,
        implementation: implementationWith({ token }),
        ...(batched ? { batches: batchMethods.identity } : { notYetImplemented: Object.values(batchMethods.identity) }),
      },
    ],
  });
}

beforeAll(async () => {
  server = await startServer(metrics, true);
  raw = createClient(identity.IdentityServiceClient, `127.0.0.1:${server.port}`);
  client = promiseClient(raw, { deadlineMs: 2000 }, batchMethods.identity);
});

afterAll(async () => {
  openGate();
  raw?.close();
  await server?.close(1000);
});

beforeEach(() => {
  seen.length = 0;
});

async function handled(method: string, code: string, type: 'unary' | 'server_stream'): Promise<number> {
  const samples = parseMetricsText(await metrics.registry.metrics());
  const labels = { grpc_type: type, grpc_service: serviceNames.identity, grpc_method: method, grpc_code: code, service: 'batch-test' };
  return samples.find((s) => s.name === 'grpc_server_handled_total' && isDeepStrictEqual(s.labels, labels))?.value ?? 0;
}

const call = (grantType: string, scope: string, requestId?: string) =>
  client.token(tokenRequest(grantType, scope), { requestId, headers: { 'x-client-ip': `198.51.100.${scope.length}` } });

describe('calls coalesced into their batch method', () => {
  it('sends the calls of one turn as one batch; each item is its own call with its own request id and metadata', async () => {
    const batchesBefore = await handled('TokenBatch', 'OK', 'server_stream');
    const tokensBefore = await handled('Token', 'OK', 'unary');
    const scopes = ['a', 'bb', 'ccc', 'dddd', 'eeeee'];
    const ids = scopes.map(() => newId('req'));
    const answers = await Promise.all(scopes.map((s, i) => call('ok', s, ids[i])));
    expect(answers.map((a) => a.accessToken)).toEqual(scopes.map((s) => `at-${s}`));
    expect(await handled('TokenBatch', 'OK', 'server_stream')).toBe(batchesBefore + 1);
    // Each item counts as a Token call of its own.
    expect(await handled('Token', 'OK', 'unary')).toBe(tokensBefore + scopes.length);
    expect([...seen].sort((x, y) => x.scope.localeCompare(y.scope))).toEqual(
      scopes.map((s, i) => ({ scope: s, requestId: ids[i], fromContext: ids[i], ip: `198.51.100.${s.length}` })),
    );
  });

  it("carries each call's trace context: the caller's traceparent, or the context it was made in", async () => {
    const [a, b] = ['4bf92f3577b34da6a3ce929d0e0e4736', '0af7651916cd43dd8448eb211c80319c'];
    await Promise.all([
      client.token(tokenRequest('ok', 'traced-a'), { headers: { traceparent: `00-${a}-00f067aa0ba902b7-01` } }),
      withSpan('job', parseTraceparent(`00-${b}-b7ad6b7169203331-01`), {}, () => client.token(tokenRequest('ok', 'traced-b'))),
    ]);
    expect([traces.get('traced-a'), traces.get('traced-b')]).toEqual([a, b]);
  });

  it('sends a call alone as the unary method', async () => {
    const batchesBefore = await handled('TokenBatch', 'OK', 'server_stream');
    const tokensBefore = await handled('Token', 'OK', 'unary');
    expect((await call('ok', 'alone')).accessToken).toBe('at-alone');
    expect(await handled('TokenBatch', 'OK', 'server_stream')).toBe(batchesBefore);
    expect(await handled('Token', 'OK', 'unary')).toBe(tokensBefore + 1);
  });

  it("gives each caller its own error, as its own call would have, and the others their answers", async () => {
    const alone = (await call('invalid', 'x').then(() => undefined, (e: unknown) => e)) as AppError;
    expect(alone).toBeInstanceOf(AppError);
    const [ok1, invalid, boom, limited, ok2] = await Promise.allSettled([call('ok', 'one'), call('invalid', 'x'), call('boom', 'y'), call('limited', 'z'), call('ok', 'two')]);
    expect(ok1).toEqual({ status: 'fulfilled', value: answer(tokenRequest('ok', 'one')) });
    expect(ok2).toEqual({ status: 'fulfilled', value: answer(tokenRequest('ok', 'two')) });
    const reason = (r: PromiseSettledResult<unknown>) => (r as PromiseRejectedResult).reason as AppError;
    expect(reason(invalid)).toBeInstanceOf(AppError);
    expect({ code: reason(invalid).code, message: reason(invalid).message, details: reason(invalid).details }).toEqual({ code: alone.code, message: alone.message, details: alone.details });
    expect(reason(invalid).details).toEqual([{ field: 'scope', message: 'no scope x' }]);
    // A plain error is internal_error with a generic message: nothing of the database's text reaches the caller.
    expect(reason(boom).code).toBe('internal_error');
    expect(reason(boom).message).not.toMatch(/oauth_grants|pid/);
    expect({ code: reason(limited).code, retryAfterSeconds: reason(limited).retryAfterSeconds }).toEqual({ code: 'rate_limited', retryAfterSeconds: 7 });
  });

  it('checks each item against the input rules on its own: a faulty item fails alone, named by its own fields', async () => {
    const [bad, good] = await Promise.allSettled([call('ok', 'nul\u0000byte'), call('ok', 'fine')]);
    expect(good).toEqual({ status: 'fulfilled', value: answer(tokenRequest('ok', 'fine')) });
    const err = (bad as PromiseRejectedResult).reason as AppError;
    expect(err.code).toBe('invalid_request');
    expect(err.details.map((d) => d.field)).toEqual(['scope']);
    expect(seen.map((s) => s.scope)).toEqual(['fine']);
  });

  it('answers each item as soon as it is done: a slow item does not hold up the others', async () => {
    gate = new Promise<void>((resolve) => (openGate = resolve));
    const slow = call('slow', 'slow');
    let slowDone = false;
    void slow.then(() => (slowDone = true));
    const fast = await Promise.all([call('ok', 'f1'), call('ok', 'f2')]);
    expect(fast.map((a) => a.accessToken)).toEqual(['at-f1', 'at-f2']);
    expect(slowDone).toBe(false);
    openGate();
    expect((await slow).accessToken).toBe('at-slow');
  });

  it(`splits the calls of one turn into batches of at most ${BATCH_MAX}`, async () => {
    const batchesBefore = await handled('TokenBatch', 'OK', 'server_stream');
    const n = BATCH_MAX * 2 + 50;
    const answers = await Promise.all(Array.from({ length: n }, (_, i) => call('ok', `s${i}`)));
    expect(answers.map((a) => a.accessToken)).toEqual(Array.from({ length: n }, (_, i) => `at-s${i}`));
    expect(await handled('TokenBatch', 'OK', 'server_stream')).toBe(batchesBefore + 3);
  });

  it('fails every unanswered item of a batch whose deadline passed with unavailable, as single calls fail', async () => {
    gate = new Promise<void>((resolve) => (openGate = resolve));
    const short = promiseClient(raw, { deadlineMs: 300 }, batchMethods.identity);
    const results = await Promise.allSettled([1, 2, 3].map((i) => short.token(tokenRequest('slow', `d${i}`))));
    openGate();
    expect(results.map((r) => r.status === 'rejected' && (r.reason as AppError).code)).toEqual(['unavailable', 'unavailable', 'unavailable']);
  });
});

describe('a server without the batch method', () => {
  it('gets every call alone (UNIMPLEMENTED once, then single calls from the start)', async () => {
    const own = new Metrics('batch-old');
    const old = await startServer(own, false);
    const clientMetrics = new Metrics('batch-old-client');
    const oldRaw = createClient(identity.IdentityServiceClient, `127.0.0.1:${old.port}`, clientMetrics);
    const oldClient = promiseClient(oldRaw, { deadlineMs: 2000 }, batchMethods.identity);
    try {
      for (const round of [1, 2]) {
        const answers = await Promise.all(['a', 'b', 'c'].map((s) => oldClient.token(tokenRequest('ok', `${s}${round}`))));
        expect(answers.map((a) => a.accessToken)).toEqual([`at-a${round}`, `at-b${round}`, `at-c${round}`]);
      }
      const samples = parseMetricsText(await own.registry.metrics());
      const tokens = samples.find((s) => s.name === 'grpc_server_handled_total' && s.labels.grpc_method === 'Token' && s.labels.grpc_code === 'OK');
      expect(tokens?.value).toBe(6);
      // The client tried one batch, then sent single calls only.
      const sent = parseMetricsText(await clientMetrics.registry.metrics()).filter((x) => x.name === 'grpc_client_handled_total');
      expect(sent.map((x) => [x.labels.grpc_method, x.labels.grpc_code, x.value]).sort()).toEqual([
        ['Token', 'OK', 6],
        ['TokenBatch', 'UNIMPLEMENTED', 1],
      ]);
    } finally {
      oldRaw.close();
      await old.close(500);
    }
  });
});

describe('a closed client', () => {
  it('fails the calls made through it, alone or together, without throwing out of the event loop', async () => {
    const closed = createClient(identity.IdentityServiceClient, `127.0.0.1:${server.port}`);
    const calls = promiseClient(closed, { deadlineMs: 2000 }, batchMethods.identity);
    closed.close();
    const results = await Promise.allSettled([calls.token(tokenRequest('ok', 'x')), calls.token(tokenRequest('ok', 'y'))]);
    const alone = await Promise.allSettled([calls.token(tokenRequest('ok', 'z'))]);
    expect([...results, ...alone].map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect([...results, ...alone].every((r) => (r as PromiseRejectedResult).reason instanceof AppError)).toBe(true);
  });
});

describe('batches from any caller', () => {
  function rawBatch(items: identity.TokenBatchItem[]): Promise<{ results: identity.TokenBatchResult[]; status: string }> {
    return new Promise((resolve) => {
      const results: identity.TokenBatchResult[] = [];
      raw
        .tokenBatch({ items }, new grpc.Metadata(), { deadline: new Date(Date.now() + 2000) })
        .on('data', (r: identity.TokenBatchResult) => results.push(r))
        .on('error', (e: grpc.ServiceError) => resolve({ results, status: grpc.status[e.code] }))
        .on('end', () => resolve({ results, status: 'OK' }));
    });
  }

  it('refuses an item with unusable metadata or no request alone, naming it, and answers the rest', async () => {
    const id = newId('req');
    const { results, status } = await rawBatch([
      { request: tokenRequest('ok', 'm0'), metadata: { 'Bad Key': 'v' } },
      { request: tokenRequest('ok', 'm1'), metadata: { 'x-trace-bin': 'AAAA' } },
      { request: undefined, metadata: {} },
      { request: tokenRequest('ok', 'm3'), metadata: { 'x-request-id': id } },
    ]);
    expect(status).toBe('OK');
    const byIndex = Object.fromEntries(results.map((r) => [r.index, r]));
    expect(Object.keys(byIndex).sort()).toEqual(['0', '1', '2', '3']);
    for (const i of [0, 1]) expect(byIndex[i]).toMatchObject({ response: undefined, error: { code: 'invalid_request' } });
    expect(JSON.parse(byIndex[0]!.error!.detailsJson)).toEqual([{ field: 'items[0].metadata', message: expect.any(String) }]);
    expect(JSON.parse(byIndex[2]!.error!.detailsJson)).toEqual([{ field: 'items[2].request', message: 'is required' }]);
    expect(byIndex[3]).toMatchObject({ error: undefined, response: { accessToken: 'at-m3' } });
    expect(seen).toEqual([{ scope: 'm3', requestId: id, fromContext: id, ip: undefined }]);
  });

  it('ends an empty batch at once and refuses one of more than 1,000 items as a whole', async () => {
    expect(await rawBatch([])).toEqual({ results: [], status: 'OK' });
    const big = await rawBatch(Array.from({ length: 1001 }, () => ({ request: tokenRequest('ok', 'x'), metadata: {} })));
    expect(big).toEqual({ results: [], status: 'INVALID_ARGUMENT' });
    expect(seen).toEqual([]);
  });
});
