import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { AppError, fromCallError, fromGrpcError, type CallError } from '../errors';
import type { Metrics } from '../metrics';
import { grpcClientMetrics } from './client-metrics';
import type { GrpcTls } from './tls';
import { tracingInterceptors } from '../tracing/grpc';
import { currentTraceContext } from '../tracing/tracer';
import { formatTraceparent, TRACEPARENT } from '../tracing/traceparent';

export interface CallOptions {
  requestId?: string;
  /** Milliseconds until the call's deadline. */
  deadlineMs: number;
  /**
   * Extra metadata (e.g. x-actor-id, x-client-ip) for the service's audit events; a `traceparent` here is the
   * call's trace context (the gateway's request span), else the current context's is sent.
   */
  headers?: Record<string, string>;
}

type BatchMethod = (req: unknown, md: grpc.Metadata, opts: Partial<grpc.CallOptions>) => grpc.ClientReadableStream<BatchResult>;
type Callback<Res> = (err: grpc.ServiceError | null, res: Res) => void;
type UnaryMethod<Req, Res> = (
  req: Req,
  md: grpc.Metadata,
  opts: Partial<grpc.CallOptions>,
  cb: Callback<Res>,
) => grpc.ClientUnaryCall;

/** The promise form of a ts-proto grpc-js client's unary methods: every call carries a deadline and the request id. */
export type PromiseClient<C> = {
  [K in Exclude<keyof C, keyof grpc.Client> as C[K] extends (...args: never[]) => grpc.ClientReadableStream<unknown>
    ? never
    : K]: C[K] extends UnaryMethod<infer Req, infer Res>
    ? (req: Req, opts?: Partial<CallOptions>) => Promise<Res>
    : never;
};

/** What a call sends as metadata: its request id, its extra headers and the current trace context. */
function callHeaders(opts: Partial<CallOptions> | undefined, defaults: CallOptions): Record<string, string> {
  const headers: Record<string, string> = {};
  const requestId = opts?.requestId ?? defaults.requestId;
  if (requestId) headers['x-request-id'] = requestId;
  Object.assign(headers, opts?.headers);
  const context = headers[TRACEPARENT] ? undefined : currentTraceContext();
  if (context) headers[TRACEPARENT] = formatTraceparent(context);
  return headers;
}

interface Waiting {
  req: unknown;
  headers: Record<string, string>;
  /** Epoch milliseconds. */
  deadline: number;
  resolve: (res: unknown) => void;
  reject: (err: unknown) => void;
  answered?: boolean;
}

/** The most calls one batch carries (the server takes up to 1,000). */
export const BATCH_MAX = 100;

interface BatchResult {
  index: number;
  response?: unknown;
  error?: CallError;
}

/**
 * Calls of one unary method made in the same turn of the event loop, sent as one call of its batch method
 * (ServiceRegistration.batches): one HTTP/2 stream, one set of headers and one message each way instead of
 * one per call. A call alone goes as itself; a server without the batch method (UNIMPLEMENTED) gets single
 * calls from then on. Each caller gets its own answer or error, exactly as from its own call.
 */
class Coalescer {
  private queue: Waiting[] = [];
  private unsupported = false;

  constructor(
    private readonly sendBatch: (req: { items: { request: unknown; metadata: Record<string, string> }[] }, deadline: Date) => grpc.ClientReadableStream<BatchResult>,
    private readonly sendOne: (w: Waiting) => void,
  ) {}

  call(req: unknown, headers: Record<string, string>, deadline: number): Promise<unknown> {
    return new Promise((resolve, reject) => {
      if (this.queue.push({ req, headers, deadline, resolve, reject }) === 1) setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    const queue = this.queue;
    this.queue = [];
    for (let i = 0; i < queue.length; i += BATCH_MAX) {
      const part = queue.slice(i, i + BATCH_MAX);
      if (part.length === 1 || this.unsupported) part.forEach(this.sendAlone);
      else {
        try {
          this.send(part);
        } catch (err) {
          // A call that cannot even start (a closed channel throws) fails its callers, never the process.
          const e = fromGrpcError(err);
          for (const w of part) w.reject(e);
        }
      }
    }
  }

  private readonly sendAlone = (w: Waiting): void => {
    try {
      this.sendOne(w);
    } catch (err) {
      w.reject(fromGrpcError(err));
    }
  };

  private send(part: Waiting[]): void {
    let deadline = part[0]!.deadline;
    for (const w of part) deadline = Math.min(deadline, w.deadline);
    let left = part.length;
    const answer = (w: Waiting, settle: () => void) => {
      if (w.answered) return;
      w.answered = true;
      left--;
      settle();
    };
    const stream = this.sendBatch({ items: part.map((w) => ({ request: w.req, metadata: w.headers })) }, new Date(deadline));
    stream.on('data', (r: BatchResult) => {
      const w = part[r.index];
      if (!w) return;
      if (r.error) answer(w, () => w.reject(fromCallError(r.error!)));
      else if (r.response) answer(w, () => w.resolve(r.response));
    });
    stream.on('error', (err: grpc.ServiceError) => {
      if (err.code === grpc.status.UNIMPLEMENTED && left === part.length) {
        // A server from before the batch method: every call alone, now and from now on.
        this.unsupported = true;
        left = 0;
        part.forEach(this.sendAlone);
        return;
      }
      const e = fromGrpcError(err);
      for (const w of part) answer(w, () => w.reject(e));
    });
    // 'end' (not 'status'): it comes after every message was read; 'status' may come while some still wait.
    stream.on('end', () => {
      // Ended without an answer for some call (a server that broke the batch contract): those fail, none hangs.
      if (left) for (const w of part) answer(w, () => w.reject(new AppError('internal_error', 'An internal error occurred')));
    });
  }
}

/**
 * The promise form of a client's unary methods. `batches` (unary method -> its batch method, as the server's
 * registration names them) sends the calls of a method made together as one batch call (Coalescer).
 */
export function promiseClient<C extends grpc.Client>(client: C, defaults: CallOptions, batches: Record<string, string> = {}): PromiseClient<C> {
  const methods = new Map<string, (req: unknown, opts?: Partial<CallOptions>) => Promise<unknown>>();
  const make = (prop: string) => {
    const method = (client as unknown as Record<string, UnaryMethod<unknown, unknown>>)[prop];
    if (typeof method !== 'function') return undefined;
    const sendOne = (w: Waiting) => {
      const md = new grpc.Metadata();
      for (const [k, v] of Object.entries(w.headers)) md.set(k, v);
      method.call(client, w.req, md, { deadline: new Date(w.deadline) }, (err, res) => (err ? w.reject(fromGrpcError(err)) : w.resolve(res)));
    };
    const batchMethod = batches[prop];
    const batch = batchMethod !== undefined && (client as unknown as Record<string, BatchMethod>)[batchMethod];
    if (batch) {
      const coalescer = new Coalescer((req, deadline) => batch.call(client, req, new grpc.Metadata(), { deadline }), sendOne);
      return (req: unknown, opts?: Partial<CallOptions>) => coalescer.call(req, callHeaders(opts, defaults), Date.now() + (opts?.deadlineMs ?? defaults.deadlineMs));
    }
    return (req: unknown, opts?: Partial<CallOptions>) =>
      new Promise((resolve, reject) =>
        sendOne({ req, headers: callHeaders(opts, defaults), deadline: Date.now() + (opts?.deadlineMs ?? defaults.deadlineMs), resolve, reject }),
      );
  };
  return new Proxy({} as PromiseClient<C>, {
    get(_target, prop: string) {
      let fn = methods.get(prop);
      if (!fn) {
        fn = make(prop);
        if (fn) methods.set(prop, fn);
      }
      return fn;
    },
  });
}

/**
 * A channel client, plain unless `tls` says otherwise (GRPC_TLS); with `metrics`, its calls
 * are counted (grpc_client_handled_total, grpc_client_handling_seconds).
 */
export function createClient<C>(
  Ctor: new (address: string, creds: grpc.ChannelCredentials, options?: Partial<grpc.ClientOptions>) => C,
  address: string,
  metrics?: Metrics,
  /** Transport security (GRPC_TLS): verify the server, and with mtls present this process's certificate. */
  tls?: GrpcTls,
  /** More channel options (e.g. a larger HTTP/2 flow control window for a bulk stream). */
  extra?: Partial<grpc.ClientOptions>,
): C {
  // A target naming several replicas (`dns:///<headless service>:port`, or an `ipv4:a:p,b:p` list) spreads
  // calls over all of them (one HTTP/2 connection per replica). A plain host:port keeps pick_first, which
  // reconnects at once on the next call after the server restarted instead of failing calls during a backoff.
  const balanced = /^(dns|ipv4):/.test(address);
  return new Ctor(address, tls?.channelCredentials() ?? grpc.credentials.createInsecure(), {
    ...tls?.channelOptions(),
    'grpc.keepalive_time_ms': 30_000,
    // Transparent retries only (no retry policy is configured): a call a draining server refused before running
    // it (GOAWAY, REFUSED_STREAM) goes to another replica; a call that reached a server is never sent twice.
    'grpc.enable_retries': 1,
    // A replica that went away is tried again soon (default backoff grows to 120 s).
    'grpc.initial_reconnect_backoff_ms': 250,
    'grpc.max_reconnect_backoff_ms': 5_000,
    ...(balanced ? { 'grpc.service_config': JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }) } : {}),
    interceptors: [...(metrics ? [grpcClientMetrics(metrics)] : []), ...tracingInterceptors()],
    ...extra,
  });
}

const HealthClient = grpc.makeGenericClientConstructor(healthService as grpc.ServiceDefinition, 'Health');

/** One grpc.health.v1 Check; resolves to true when the service is SERVING. */
export function checkHealth(address: string, service = '', deadlineMs = 1_000, tls?: GrpcTls): Promise<boolean> {
  const client = new HealthClient(address, tls?.channelCredentials() ?? grpc.credentials.createInsecure(), tls?.channelOptions());
  return new Promise<boolean>((resolve) => {
    client.makeUnaryRequest(
      '/grpc.health.v1.Health/Check',
      (arg: { service: string }) => healthService.Check.requestSerialize(arg),
      (buf: Buffer) => healthService.Check.responseDeserialize(buf) as { status: string },
      { service },
      new grpc.Metadata(),
      { deadline: new Date(Date.now() + deadlineMs) },
      (err, res) => {
        client.close();
        resolve(!err && res?.status === 'SERVING');
      },
    );
  });
}
