import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { identity, descriptorSets, serviceNames } from '@secsvc/proto';
import { currentRequestId } from '../src/context';
import { AppError } from '../src/errors';
import { checkHealth, createClient, promiseClient } from '../src/grpc/client';
import { startGrpcServer, type CallContext, type RunningGrpcServer, type ServerStream } from '../src/grpc/server';
import { isId } from '../src/ids';
import { createLogger } from '../src/logger';
import { isDeepStrictEqual } from 'node:util';
import { Metrics, parseMetricsText } from '../src/metrics';

const labelsOf = (type: string, method: string) => ({ grpc_type: type, grpc_service: 'secsvc.identity.v1.IdentityService', grpc_method: method });

type User = identity.User;

function user(id: string, name = 'Ada'): User {
  return {
    id,
    environment: 'live',
    email: 'ada@example.com',
    name,
    emailVerified: false,
    roles: ['role_admin'],
    metadataJson: '{"a":[1,null]}',
    createdAt: '2024-05-01T10:00:00.000Z',
    updatedAt: '2024-05-01T10:00:00.000Z',
  };
}

const seen: { requestId: string; fromContext: string | undefined; actor: string | undefined }[] = [];
let releaseSlow: (() => void) | undefined;

const implementation = {
  getUser: async (req: identity.GetUserRequest): Promise<User> => user(req.id),
  createUser: async (): Promise<User> => {
    throw AppError.invalid([{ field: 'email', message: 'invalid email format' }], 'The request is invalid');
  },
  deleteUser: async (): Promise<identity.DeleteUserResponse> => {
    throw new Error('ERROR: column "password_hash" does not exist in SELECT password_hash FROM users');
  },
  updateUser: async (req: identity.UpdateUserRequest, ctx: CallContext): Promise<User> => {
    seen.push({ requestId: ctx.requestId, fromContext: currentRequestId(), actor: ctx.metadata.get('x-actor-id')[0]?.toString() });
    return user(req.id, req.name ?? 'unchanged');
  },
  listUsers: async (): Promise<identity.ListUsersResponse> => {
    await new Promise<void>((resolve) => (releaseSlow = resolve));
    return { users: [], hasMore: false, nextCursor: '' };
  },
  authenticateApiKey: async (): Promise<identity.ApiKeyPrincipal> => {
    throw AppError.notFound('user');
  },
  // Server streaming: "ready", one change, then either end (key "end") or stay open until the client cancels.
  watchCredentialChanges: (_req: identity.WatchCredentialChangesRequest, ctx: CallContext, stream: ServerStream<identity.CredentialChange>) => {
    stream.onClose(() => streamClosed.push(ctx.requestId));
    stream.write({ kind: 'ready', id: '' });
    stream.write({ kind: 'changed', id: 'key_1' });
    if (ctx.metadata.get('x-mode')[0]?.toString() === 'end') stream.end();
  },
};
const streamClosed: string[] = [];

function readStream(md: grpc.Metadata, cancelAfter?: number): Promise<{ messages: identity.CredentialChange[]; ended: string }> {
  return new Promise((resolve) => {
    const messages: identity.CredentialChange[] = [];
    const call = raw.watchCredentialChanges({}, md);
    call.on('data', (m: identity.CredentialChange) => {
      messages.push(m);
      if (cancelAfter !== undefined && messages.length === cancelAfter) call.cancel();
    });
    call.on('end', () => resolve({ messages, ended: 'end' }));
    call.on('error', (e: { code: number }) => resolve({ messages, ended: `error:${e.code}` }));
  });
}

/** The RPCs these tests do not exercise answer not_found, so the real service definition can be served. */
function complete(impl: Record<string, unknown>) {
  const missing = async () => {
    throw AppError.notFound('RPC in this test');
  };
  return Object.fromEntries(Object.keys(identity.IdentityServiceService).map((k) => [k, impl[k] ?? missing])) as typeof implementation;
}

let server: RunningGrpcServer;
let addr: string;
let raw: identity.IdentityServiceClient;
let client: ReturnType<typeof promiseClient<identity.IdentityServiceClient>>;
const metrics = new Metrics('test');

beforeAll(async () => {
  server = await startGrpcServer({
    host: '127.0.0.1',
    port: 0,
    logger: createLogger('test', 'silent'),
    metrics,
    descriptorSets,
    services: [{ name: serviceNames.identity, definition: identity.IdentityServiceService, implementation: complete(implementation) }],
  });
  addr = `127.0.0.1:${server.port}`;
  raw = createClient(identity.IdentityServiceClient, addr);
  client = promiseClient(raw, { deadlineMs: 2000 });
});

afterAll(async () => {
  releaseSlow?.();
  raw?.close();
  await server?.close(1000);
});

interface ReflectionResponse {
  list_services_response?: { service: { name: string }[] };
  error_response?: unknown;
}

async function rejection(p: Promise<unknown>): Promise<AppError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error('expected the call to fail');
}

describe('server streaming', () => {
  it('delivers the messages in order and then the end of the stream', async () => {
    const md = new grpc.Metadata();
    md.set('x-mode', 'end');
    const { messages, ended } = await readStream(md);
    expect(messages).toEqual([
      { kind: 'ready', id: '' },
      { kind: 'changed', id: 'key_1' },
    ]);
    expect(ended).toBe('end');
  });

  it('tells the implementation when the client cancels', async () => {
    const md = new grpc.Metadata();
    md.set('x-request-id', 'req_streamcancel00000000');
    const { messages, ended } = await readStream(md, 2);
    expect(messages).toHaveLength(2);
    expect(ended).toBe(`error:${grpc.status.CANCELLED}`);
    for (let i = 0; i < 100 && !streamClosed.includes('req_streamcancel00000000'); i++) await new Promise((r) => setTimeout(r, 10));
    expect(streamClosed).toContain('req_streamcancel00000000');
  });
});

describe('gRPC server and client', () => {
  it('listens on the port the OS gave', () => {
    expect(server.port).toBeGreaterThan(0);
  });

  it('answers a normal call', async () => {
    const res = await client.getUser({ environment: 'live', id: 'user_01j00000000000000000000000' });
    expect(res).toEqual(user('user_01j00000000000000000000000'));
  });

  it('passes an AppError of the service to the client with its code, message and details', async () => {
    const err = await rejection(client.createUser({ environment: 'live', email: 'x', name: 'n', roles: [], metadataJson: '' }));
    expect(err.code).toBe('invalid_request');
    expect(err.message).toBe('The request is invalid');
    expect(err.details).toEqual([{ field: 'email', message: 'invalid email format' }]);
  });

  it('passes not_found through', async () => {
    const err = await rejection(client.authenticateApiKey({ key: 'svc_sk_x' }));
    expect(err.code).toBe('not_found');
    expect(err.message).toBe('user not found');
  });

  it('turns a plain Error into internal_error with a generic message', async () => {
    const err = await rejection(client.deleteUser({ environment: 'live', id: 'user_x' }));
    expect(err.code).toBe('internal_error');
    expect(err.message).not.toContain('password_hash');
    expect(err.message).not.toContain('SELECT');
    expect(err.details).toEqual([]);
  });

  it('rejects with unavailable when the handler is slower than the deadline', async () => {
    // the handler waits until released, which happens only after the client gave up
    const err = await rejection(client.listUsers({ environment: 'live', limit: 10, cursor: '' }, { deadlineMs: 50 }));
    expect(err.code).toBe('unavailable');
    releaseSlow?.();
  });

  it('gives the handler the x-request-id sent by the client, also through the async context', async () => {
    const requestId = 'req_01testrequestid0000000000';
    const res = await client.updateUser(
      { environment: 'live', id: 'user_y', name: 'Grace' },
      { requestId, headers: { 'x-actor-id': 'key_abc' } },
    );
    expect(res.name).toBe('Grace');
    expect(seen.at(-1)).toEqual({ requestId, fromContext: requestId, actor: 'key_abc' });
  });

  it('makes a new request id when the client sends none or a malformed one', async () => {
    await client.updateUser({ environment: 'live', id: 'user_y' });
    const first = seen.at(-1)!;
    expect(isId('req', first.requestId)).toBe(true);
    expect(first.fromContext).toBe(first.requestId);
    await client.updateUser({ environment: 'live', id: 'user_y' }, { requestId: 'req_bad!' });
    const second = seen.at(-1)!;
    expect(isId('req', second.requestId)).toBe(true);
    expect(second.requestId).not.toBe(first.requestId);
  });

  it('counts handled calls by type, service, method and code in the metrics registry (go-grpc-prometheus labels)', async () => {
    await client.getUser({ environment: 'live', id: 'user_m' });
    await rejection(client.createUser({ environment: 'live', email: 'x', name: 'n', roles: [], metadataJson: '' }));
    const samples = parseMetricsText(await metrics.registry.metrics());
    const count = (method: string, code: string, type = 'unary') =>
      samples.find((s) => s.name === 'grpc_server_handled_total' && isDeepStrictEqual(s.labels, { ...labelsOf(type, method), grpc_code: code, service: 'test' }))?.value ?? 0;
    // tests of this file run in order: GetUser and CreateUser were each called twice, DeleteUser once
    expect(count('GetUser', 'OK')).toBe(2);
    expect(count('CreateUser', 'INVALID_ARGUMENT')).toBe(2);
    expect(count('DeleteUser', 'INTERNAL')).toBe(1);
    expect(count('GetUser', 'INTERNAL')).toBe(0);
    // the change streams ended (OK) or were cancelled by the client (CANCELLED)
    expect(count('WatchCredentialChanges', 'OK', 'server_stream') + count('WatchCredentialChanges', 'CANCELLED', 'server_stream')).toBeGreaterThan(0);
    // the duration has no code label
    expect(samples).toContainEqual({ name: 'grpc_server_handling_seconds_count', labels: { ...labelsOf('unary', 'GetUser'), service: 'test' }, value: 2 });
  });

  it('counts the calls a client made when it was given the metrics (unary and streaming, by code)', async () => {
    const own = new Metrics('client-test');
    const counted = createClient(identity.IdentityServiceClient, addr, own);
    try {
      const call = promiseClient(counted, { deadlineMs: 2000 });
      await call.getUser({ environment: 'live', id: 'user_c' });
      await rejection(call.authenticateApiKey({ key: 'svc_sk_nope' }));
      await new Promise<void>((resolve) => {
        const md = new grpc.Metadata();
        md.set('x-mode', 'end');
        counted.watchCredentialChanges({}, md).on('data', () => undefined).on('end', resolve).on('error', () => resolve());
      });
      const samples = parseMetricsText(await own.registry.metrics());
      const service = 'client-test';
      expect(samples).toContainEqual({ name: 'grpc_client_handled_total', labels: { ...labelsOf('unary', 'GetUser'), grpc_code: 'OK', service }, value: 1 });
      expect(samples).toContainEqual({ name: 'grpc_client_handled_total', labels: { ...labelsOf('unary', 'AuthenticateApiKey'), grpc_code: 'NOT_FOUND', service }, value: 1 });
      expect(samples).toContainEqual({ name: 'grpc_client_handled_total', labels: { ...labelsOf('server_stream', 'WatchCredentialChanges'), grpc_code: 'OK', service }, value: 1 });
      expect(samples).toContainEqual({ name: 'grpc_client_handling_seconds_count', labels: { ...labelsOf('unary', 'GetUser'), service }, value: 1 });
    } finally {
      counted.close();
    }
  });

  it('lists the services through server reflection', async () => {
    const reflectionProto = path.join(
      path.dirname(require.resolve('@grpc/reflection/package.json')),
      'build/proto/grpc/reflection/v1alpha/reflection.proto',
    );
    const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(reflectionProto, { keepCase: true })) as unknown as {
      grpc: { reflection: { v1alpha: { ServerReflection: grpc.ServiceClientConstructor } } };
    };
    const reflection = new pkg.grpc.reflection.v1alpha.ServerReflection(addr, grpc.credentials.createInsecure());
    try {
      const names = await new Promise<string[]>((resolve, reject) => {
        const stream = reflection.ServerReflectionInfo({ deadline: new Date(Date.now() + 5000) }) as grpc.ClientDuplexStream<
          unknown,
          ReflectionResponse
        >;
        stream.on('data', (res: ReflectionResponse) => {
          resolve(res.list_services_response?.service.map((s) => s.name) ?? []);
          stream.end();
        });
        stream.on('error', reject);
        stream.write({ list_services: '' });
      });
      expect(names).toEqual(expect.arrayContaining([serviceNames.identity, 'grpc.health.v1.Health']));
    } finally {
      reflection.close();
    }
  });

  it('reports health SERVING overall and for the service, not for an unknown one', async () => {
    expect(await checkHealth(addr)).toBe(true);
    expect(await checkHealth(addr, serviceNames.identity)).toBe(true);
    expect(await checkHealth(addr, 'secsvc.nothing.v1.Nope')).toBe(false);
  });

  it('is not healthy after close()', async () => {
    releaseSlow?.();
    await server.close(1000);
    expect(await checkHealth(addr)).toBe(false);
    expect(await checkHealth(addr, serviceNames.identity)).toBe(false);
  });
});

describe('startGrpcServer', () => {
  it('refuses a service whose implementation misses a method', async () => {
    const { getUser: _omitted, ...partial } = implementation;
    await expect(
      startGrpcServer({
        host: '127.0.0.1',
        port: 0,
        logger: createLogger('test', 'silent'),
        metrics: new Metrics('test2'),
        descriptorSets,
        services: [{ name: serviceNames.identity, definition: identity.IdentityServiceService, implementation: partial }],
      }),
    ).rejects.toThrow(/no implementation for getUser/);
  });
});

describe('client load balancing', () => {
  it('spreads calls over every address of an ipv4: target (round robin), and keeps serving when one replica stops', async () => {
    const replicas = await Promise.all(
      ['a', 'b'].map((name) =>
        startGrpcServer({
          host: '127.0.0.1',
          port: 0,
          logger: createLogger('test', 'silent'),
          metrics: new Metrics('test'),
          descriptorSets,
          services: [{ name: serviceNames.identity, definition: identity.IdentityServiceService, implementation: complete({ getUser: async (req: identity.GetUserRequest) => user(req.id, name) }) }],
        }),
      ),
    );
    const target = `ipv4:${replicas.map((r) => `127.0.0.1:${r.port}`).join(',')}`;
    const lb = createClient(identity.IdentityServiceClient, target);
    const call = promiseClient(lb, { deadlineMs: 2000 });
    try {
      const names = new Set<string>();
      for (let i = 0; i < 20; i++) names.add((await call.getUser({ environment: 'live', id: `user_${i}` })).name);
      expect([...names].sort()).toEqual(['a', 'b']);
      expect(await checkHealth(target)).toBe(true);
      await replicas[0]!.close(100);
      const after: string[] = [];
      // A call picked while the stopped replica's connection is being torn down may fail; then all go to b.
      for (let i = 0; i < 10; i++) after.push(await call.getUser({ environment: 'live', id: 'user_x' }).then((u) => u.name, () => 'failed'));
      expect(after.slice(-5)).toEqual(['b', 'b', 'b', 'b', 'b']);
    } finally {
      lb.close();
      await Promise.all(replicas.map((r) => r.close(100)));
    }
  });
});
