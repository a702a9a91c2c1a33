import pino, { type Logger } from 'pino';
import { currentRequestId } from './context';

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

/** Structured JSON logs; every line logged inside a request carries its requestId. */
export function createLogger(service: string, level = 'info', destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: redactPaths, censor: '[redacted]' },
      mixin() {
        const requestId = currentRequestId();
        return requestId ? { requestId } : {};
      },
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}
