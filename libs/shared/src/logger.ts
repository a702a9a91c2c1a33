import pino, { type Logger } from 'pino';
import { requestContext } from './context';

export type { Logger } from 'pino';

/** Paths whose values never reach a log line. */
export const redactPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  '*.password',
  '*.token',
  '*.key',
  '*.secret',
  '*.apiKey',
  'headers.authorization',
];

/** Structured JSON logs; every line logged inside a request carries its requestId, traceId and spanId. */
export function createLogger(service: string, level = 'info', destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: redactPaths, censor: '[redacted]' },
      mixin() {
        const store = requestContext.getStore();
        if (!store) return {};
        // The trace and span ids let a log line be found from its trace (and back).
        const { requestId, trace } = store;
        return trace ? { requestId, traceId: trace.traceId, spanId: trace.spanId } : requestId ? { requestId } : {};
      },
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}
