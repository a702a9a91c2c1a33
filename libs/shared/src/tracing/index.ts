export * from './config';
export * from './traceparent';
export * from './tracer';
export * from './grpc';
export * from './postgres';
export * from './messaging';
