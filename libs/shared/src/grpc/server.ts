import * as grpc from '@grpc/grpc-js';
import { HealthImplementation } from 'grpc-health-check';
import { isValidRequestId, requestContext } from '../context';
import { AppError, errorCodes, toAppError, toCallError, toGrpcError } from '../errors';
import { inputFaults } from '../input';
import { newId } from '../ids';
import type { Logger } from '../logger';
import type { Metrics } from '../metrics';
import { addReflection, DescriptorIndex } from './reflection';
import { endRpcSpan, serverSpan } from '../tracing/grpc';
import type { GrpcTls } from './tls';

export interface CallContext {
  requestId: string;
  metadata: grpc.Metadata;
  /** The call's W3C trace id (the server sets it; see traceIdOf for hand-made contexts). */
  traceId?: string;
}

type UnaryOf<H> = H extends grpc.handleUnaryCall<infer Req, infer Res> ? (req: Req, ctx: CallContext) => Promise<Res> : never;

/** A service implemented as plain async functions: (request, context) => response. */
export type AsyncService<S> = { [K in keyof S]: UnaryOf<S[K]> };

/** The server side of a server-streaming call. */
export interface ServerStream<Res> {
  write: (message: Res) => void;
  end: () => void;
  /** Called once when the client cancels or the stream ends for any reason. */
  onClose: (fn: () => void) => void;
}

/** A server stream that sends much data: flow-controlled writes, and failure after the handler returned. */
export interface BulkServerStream<Res> extends ServerStream<Res> {
  /** Writes one message; resolves once the client can take more (HTTP/2 flow control), rejects when the call closed. */
  send: (message: Res) => Promise<void>;
  /** Ends the call with an error status (an AppError keeps its code and details; anything else is internal). */
  fail: (err: unknown) => void;
  /** True once the call ended (finished, failed or cancelled by the client). */
  isClosed: () => boolean;
}

type UnaryImpl = (req: never, ctx: CallContext) => Promise<unknown>;
type StreamImpl = (req: never, ctx: CallContext, stream: never) => void;

export interface ServiceRegistration {
  /** Fully qualified name, e.g. secsvc.identity.v1.IdentityService (for health status). */
  name: string;
  definition: grpc.ServiceDefinition;
  /** Unary methods: async (request, ctx) => response. Server-streaming methods: (request, ctx, stream) => void. */
  implementation: Record<string, UnaryImpl | StreamImpl>;
  /** Methods of the definition not implemented yet: they answer UNIMPLEMENTED (grpc-js's own reply). */
  notYetImplemented?: string[];
  /**
   * Unary methods also served in batches: unary method -> its batch method (e.g. token -> tokenBatch; see
   * batchMethods in @secsvc/proto). A batch takes `items` of { request, metadata } and streams
   * { index, response } or { index, error } (a CallError) per item; promiseClient(…, batches) sends them.
   */
  batches?: Record<string, string>;
}

export interface GrpcServerOptions {
  host: string;
  port: number;
  logger: Logger;
  metrics: Metrics;
  /** FileDescriptorSets (built by buf, see libs/proto) published through server reflection. */
  descriptorSets: string[];
  services: ServiceRegistration[];
  /** Services whose RPCs are defined but not implemented yet: listed by reflection, health SERVING. */
  declaredOnly?: string[];
  /** Transport security (GRPC_TLS); absent: plain. */
  tls?: GrpcTls;
}

export interface RunningGrpcServer {
  port: number;
  health: HealthImplementation;
  /** Marks every service NOT_SERVING, lets in-flight calls finish, then stops. */
  close: (graceMs?: number) => Promise<void>;
}

/**
 * One unary call from its request and metadata to its answer: the call's context (request id, trace), input
 * rules, the handler, metrics and logging. `answer` gets the response, or the AppError the caller is told.
 */
function runUnary(
  method: string,
  fn: UnaryImpl,
  request: unknown,
  metadata: grpc.Metadata,
  logger: Logger,
  metrics: Metrics,
  answer: (err: AppError | null, res?: unknown) => void,
): void {
  const { requestId } = callContext(metadata);
  const started = process.hrtime.bigint();
  const span = serverSpan(method, metadata);
  const trace = span.spanContext();
  const done = (code: grpc.status) => {
    metrics.observeGrpc(method, grpc.status[code] ?? String(code), Number(process.hrtime.bigint() - started) / 1e9);
    endRpcSpan(span, code);
  };
  requestContext.run({ requestId, trace }, () => {
    // The same input rules as the gateway's guard, for any caller: nothing unstorable reaches a handler.
    const faults = inputFaults(request);
    const run = faults.length ? Promise.reject(AppError.invalid(faults)) : fn(request as never, { requestId, metadata, traceId: trace.traceId });
    run.then(
      (res) => {
        done(grpc.status.OK);
        answer(null, res);
      },
      (err: unknown) => {
        const appErr = toAppError(err);
        if (appErr.code === 'internal_error') {
          logger.error({ err: { message: (err as Error)?.message, stack: (err as Error)?.stack }, method }, 'rpc failed');
        } else if (appErr !== err && appErr.code === 'unavailable') {
          logger.warn({ err: { message: (err as Error)?.message }, method }, 'rpc refused: a backing service is unavailable');
        }
        done(errorCodes[appErr.code].grpc);
        answer(appErr);
      },
    );
  });
}

function wrapUnary(method: string, fn: UnaryImpl, logger: Logger, metrics: Metrics): grpc.handleUnaryCall<unknown, unknown> {
  return (call, callback) =>
    runUnary(method, fn, call.request, call.metadata, logger, metrics, (err, res) =>
      err ? callback(toGrpcError(err) as grpc.ServiceError) : callback(null, res),
    );
}

/** The most items one batch call may carry. */
export const MAX_BATCH_ITEMS = 1_000;

/** An item's metadata map as grpc.Metadata; undefined when a key or value could not be metadata. */
function metadataOf(map: Record<string, string>): grpc.Metadata | undefined {
  const md = new grpc.Metadata();
  try {
    for (const [k, v] of Object.entries(map)) {
      // Binary (-bin) keys carry bytes, which a string map cannot: refused like any other unusable key.
      if (k.endsWith('-bin')) return undefined;
      md.set(k, v);
    }
  } catch {
    return undefined;
  }
  return md;
}

interface BatchRequest {
  items: { request: unknown; metadata: Record<string, string> }[];
}

/**
 * A batch of unary calls (see ServiceRegistration.batches): every item runs as a call of `method` of its own
 * (runUnary, with the item's metadata), and its result is written, with its index, as soon as it is done.
 */
function wrapBatch(
  path: string,
  method: string,
  fn: UnaryImpl,
  logger: Logger,
  metrics: Metrics,
): grpc.handleServerStreamingCall<BatchRequest, unknown> {
  return (call) => {
    const started = process.hrtime.bigint();
    const items = call.request.items;
    const finish = (code: grpc.status) =>
      metrics.observeGrpc(path, grpc.status[code] ?? String(code), Number(process.hrtime.bigint() - started) / 1e9, 'server_stream');
    if (items.length > MAX_BATCH_ITEMS) {
      const err = toGrpcError(AppError.invalid([{ field: 'items', message: `at most ${MAX_BATCH_ITEMS} items` }]));
      call.emit('error', err);
      return finish(err.code ?? grpc.status.INVALID_ARGUMENT);
    }
    let left = items.length;
    const settle = (index: number, result: Record<string, unknown>) => {
      // A cancelled call takes no more messages; its items still run to the end, as a unary call's would.
      if (!call.cancelled) call.write({ index, ...result });
      if (--left === 0) {
        call.end();
        finish(grpc.status.OK);
      }
    };
    if (!left) {
      call.end();
      return finish(grpc.status.OK);
    }
    items.forEach((item, index) => {
      const md = metadataOf(item.metadata);
      if (!md) return settle(index, { error: toCallError(AppError.invalid([{ field: `items[${index}].metadata`, message: 'must be valid gRPC metadata (lowercase keys, printable ASCII values, no -bin keys)' }])) });
      if (!item.request) return settle(index, { error: toCallError(AppError.invalid([{ field: `items[${index}].request`, message: 'is required' }])) });
      runUnary(method, fn, item.request, md, logger, metrics, (err, res) => settle(index, err ? { error: toCallError(err) } : { response: res }));
    });
  };
}

function callContext(metadata: grpc.Metadata): CallContext {
  const incoming = metadata.get('x-request-id')[0]?.toString();
  return { requestId: isValidRequestId(incoming) ? incoming : newId('req'), metadata };
}

function wrapServerStream(
  method: string,
  fn: StreamImpl,
  logger: Logger,
  metrics: Metrics,
): grpc.handleServerStreamingCall<unknown, unknown> {
  return (call) => {
    // Streams live long (a credential-change feed for hours): recorded only as part of a caller's trace.
    const span = serverSpan(method, call.metadata, true);
    const trace = span.spanContext();
    const ctx = { ...callContext(call.metadata), traceId: trace.traceId };
    const started = process.hrtime.bigint();
    let closed = false;
    // A send() waiting for 'drain': rejected when the call closes first.
    let waiting: (() => void) | undefined;
    const closers: (() => void)[] = [() => waiting?.()];
    const close = (code: grpc.status) => {
      if (closed) return;
      closed = true;
      metrics.observeGrpc(method, grpc.status[code] ?? String(code), Number(process.hrtime.bigint() - started) / 1e9, 'server_stream');
      endRpcSpan(span, code);
      for (const c of closers) c();
    };
    call.on('cancelled', () => close(grpc.status.CANCELLED));
    call.on('close', () => close(grpc.status.OK));
    const stream: BulkServerStream<unknown> = {
      write: (m) => void (!closed && call.write(m)),
      end: () => {
        if (closed) return;
        call.end();
        close(grpc.status.OK);
      },
      onClose: (c) => (closed ? c() : closers.push(c)),
      send: (m) =>
        new Promise<void>((resolve, reject) => {
          if (closed) return reject(new Error('stream closed'));
          if (call.write(m)) return resolve();
          const drained = () => {
            waiting = undefined;
            resolve();
          };
          call.once('drain', drained);
          waiting = () => {
            call.off('drain', drained);
            reject(new Error('stream closed'));
          };
        }),
      fail: (err) => {
        if (closed) return;
        const appErr = toAppError(err);
        if (appErr.code === 'internal_error') logger.error({ err: { message: (err as Error)?.message }, method }, 'stream failed');
        const grpcErr = toGrpcError(appErr);
        call.emit('error', grpcErr);
        close(grpcErr.code ?? grpc.status.UNKNOWN);
      },
      isClosed: () => closed,
    };
    requestContext.run({ requestId: ctx.requestId, trace }, () => {
      try {
        const faults = inputFaults(call.request);
        if (faults.length) return stream.fail(AppError.invalid(faults));
        fn(call.request as never, ctx, stream as never);
      } catch (err) {
        stream.fail(err);
      }
    });
  };
}

/** A gRPC server with grpc.health.v1, server reflection, error mapping, request ids and metrics. */
export async function startGrpcServer(opts: GrpcServerOptions): Promise<RunningGrpcServer> {
  const server = new grpc.Server({ 'grpc.max_receive_message_length': 4 * 1024 * 1024 });
  for (const svc of opts.services) {
    const handlers: grpc.UntypedServiceImplementation = {};
    const batchOf = Object.fromEntries(Object.entries(svc.batches ?? {}).map(([unary, batch]) => [batch, unary]));
    for (const [key, def] of Object.entries(svc.definition)) {
      const unary = batchOf[key];
      if (unary !== undefined) {
        const target = svc.definition[unary];
        const fn = svc.implementation[unary];
        if (!target || target.requestStream || target.responseStream || !fn || !def.responseStream || def.requestStream) {
          throw new Error(`${svc.name}.${key}: a batch must stream the results of an implemented unary method (${unary})`);
        }
        handlers[key] = wrapBatch(def.path, target.path, fn as UnaryImpl, opts.logger, opts.metrics);
        continue;
      }
      const fn = svc.implementation[key];
      if (!fn && svc.notYetImplemented?.includes(key)) continue;
      if (!fn) throw new Error(`${svc.name}: no implementation for ${key}`);
      if (def.requestStream) throw new Error(`${svc.name}.${key}: client streaming is not supported`);
      handlers[key] = def.responseStream
        ? wrapServerStream(def.path, fn as StreamImpl, opts.logger, opts.metrics)
        : wrapUnary(def.path, fn as UnaryImpl, opts.logger, opts.metrics);
    }
    server.addService(svc.definition, handlers);
  }
  const names = [...opts.services.map((s) => s.name), ...(opts.declaredOnly ?? [])];
  const health = new HealthImplementation(Object.fromEntries([['', 'SERVING'], ...names.map((n) => [n, 'SERVING'])]));
  health.addToServer(server);
  addReflection(server, new DescriptorIndex(opts.descriptorSets), [
    ...names,
    'grpc.health.v1.Health',
    'grpc.reflection.v1.ServerReflection',
    'grpc.reflection.v1alpha.ServerReflection',
  ]);

  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${opts.host}:${opts.port}`, opts.tls?.serverCredentials() ?? grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return {
    port,
    health,
    close: (graceMs = 10_000) =>
      new Promise<void>((resolve) => {
        for (const n of ['', ...names]) health.setStatus(n, 'NOT_SERVING');
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}
