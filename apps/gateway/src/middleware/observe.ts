import type { NextFunction, Request, Response } from 'express';
import type { Logger, Metrics } from '@secsvc/shared';

/** Metrics by route template/method/status, and one access log line per request. */
export function observe(metrics: Metrics, logger: Logger) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      // API routes record their template in res.locals (req.baseUrl is reset once an error leaves the router).
      const route: string =
        (res.locals.route as string | undefined) ?? (req.route?.path ? `${req.baseUrl}${String(req.route.path)}` : 'unmatched');
      metrics.observeHttp(route, req.method, res.statusCode, seconds);
      logger.info(
        { requestId: req.requestId, method: req.method, route, status: res.statusCode, ms: Math.round(seconds * 1e4) / 10 },
        'request',
      );
    });
    next();
  };
}
