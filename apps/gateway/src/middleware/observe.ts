import type { NextFunction, Request, Response } from 'express';
import type { Logger, Metrics } from '@secsvc/shared';
import type { RouteTable } from './route-table';
import { endRequestTrace } from './trace';

/** The path of a request URL, without its query string. */
const pathOf = (url: string) => {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
};

/**
 * Metrics by route template/method/status, and one access log line per request. The route is the template
 * of the documented path the request was for, whatever answered it: its handler, or a refusal before routing
 * (401, 403, 405, 413, 429, 5xx); `unmatched` only for paths the gateway does not serve.
 */
export function observe(metrics: Metrics, logger: Logger, routes?: RouteTable) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      // API routes record their template in res.locals; the table knows every other documented path (and
      // those of requests refused before their route ran); req.originalUrl is the one URL no router rewrites.
      const route: string =
        (res.locals.route as string | undefined) ??
        routes?.match(pathOf(req.originalUrl))?.template ??
        (req.route?.path ? `${req.baseUrl}${String(req.route.path)}` : 'unmatched');
      metrics.observeHttp(route, req.method, res.statusCode, seconds);
      endRequestTrace(req, res, route);
      logger.info(
        { requestId: req.requestId, method: req.method, route, status: res.statusCode, ms: Math.round(seconds * 1e4) / 10 },
        'request',
      );
    });
    next();
  };
}
