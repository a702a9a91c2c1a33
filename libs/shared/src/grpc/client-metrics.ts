import * as grpc from '@grpc/grpc-js';
import type { GrpcType, Metrics } from '../metrics';

const typeOf = (d: { requestStream: boolean; responseStream: boolean }): GrpcType =>
  d.requestStream ? (d.responseStream ? 'bidi_stream' : 'client_stream') : d.responseStream ? 'server_stream' : 'unary';

/**
 * A client interceptor counting every call this process makes (unary and streaming) in
 * grpc_client_handled_total and grpc_client_handling_seconds: from its start to the status it ended with.
 */
export function grpcClientMetrics(metrics: Metrics): grpc.Interceptor {
  return (options, nextCall) => {
    const observe = metrics.grpcObserver('client', options.method_definition.path, typeOf(options.method_definition));
    const started = process.hrtime.bigint();
    return new grpc.InterceptingCall(nextCall(options), {
      start: (metadata, _listener, next) =>
        next(metadata, {
          onReceiveStatus: (status, nextStatus) => {
            observe(grpc.status[status.code] ?? String(status.code), Number(process.hrtime.bigint() - started) / 1e9);
            nextStatus(status);
          },
        }),
    });
  };
}
