import type { NextFunction, Request, Response } from 'express';
import { isValidRequestId, newId } from '@secsvc/shared';
import { startRequestTrace } from './trace';

declare module 'express-serve-static-core' {
  interface Request {
    requestId: string;
  }
}

/**
 * Reuses a well-formed incoming X-Request-Id (req_...), otherwise makes one; echoes it on the response. Starts
 * the request's trace (middleware/trace.ts).
 * Gateway log lines name it explicitly (no AsyncLocalStorage here: its promise hooks cost ~10% throughput).
 */
export function requestId(continueIncomingTrace = false) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const incoming = req.get('x-request-id');
    req.requestId = isValidRequestId(incoming) ? incoming : newId('req');
    res.setHeader('X-Request-Id', req.requestId);
    startRequestTrace(req, res, continueIncomingTrace);
    // API answers are per caller and never cached by intermediaries; no content sniffing.
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    next();
  };
}
