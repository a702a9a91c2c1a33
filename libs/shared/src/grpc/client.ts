import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { fromGrpcError } from '../errors';
import type { Metrics } from '../metrics';
import { grpcClientMetrics } from './client-metrics';
import type { GrpcTls } from './tls';
import { tracingInterceptors, withTraceparent } from '../tracing/grpc';

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

export function promiseClient<C extends grpc.Client>(client: C, defaults: CallOptions): PromiseClient<C> {
  return new Proxy({} as PromiseClient<C>, {
    get(_target, prop: string) {
      const method = (client as unknown as Record<string, UnaryMethod<unknown, unknown>>)[prop];
      if (typeof method !== 'function') return undefined;
      return (req: unknown, opts?: Partial<CallOptions>) =>
        new Promise((resolve, reject) => {
          const md = new grpc.Metadata();
          const requestId = opts?.requestId ?? defaults.requestId;
          if (requestId) md.set('x-request-id', requestId);
          for (const [k, v] of Object.entries(opts?.headers ?? {})) md.set(k, v);
          withTraceparent(md);
          const deadline = new Date(Date.now() + (opts?.deadlineMs ?? defaults.deadlineMs));
          method.call(client, req, md, { deadline }, (err, res) => (err ? reject(fromGrpcError(err)) : resolve(res)));
        });
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
