import type { NextFunction, Request, Response } from 'express';
import { AppError } from '@secsvc/shared';
import type { RouteTable } from './route-table';

/**
 * HTTP method semantics from the document's paths (every public route is documented, see RouteTable): a
 * known path with a method it does not serve answers 405 with `Allow`; OPTIONS answers 204 with exactly that
 * path's methods; HEAD is served wherever GET is (Express runs the GET handler without the body). A path is
 * matched as OpenAPI matches it: a concrete path before a templated one, so GET /v1/policies/simulate is 405
 * (only POST), not a lookup of the policy "simulate".
 */
export function methodSemantics(routes: RouteTable, charge?: (req: Request, res: Response, next: NextFunction) => void) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const template = routes.match(req.path);
    if (!template) return next();
    // Kept for the API's dispatch (app.ts), which would match the same path again.
    res.locals.knownRoute = template;
    if (req.method === 'OPTIONS') {
      // Counted like any request (and so answered with the X-RateLimit headers).
      const answer = (err?: unknown) => {
        if (err) return next(err);
        res.setHeader('Allow', template.allow);
        res.status(204).end();
      };
      return charge ? charge(req, res, answer) : answer();
    }
    if (template.methods.has(req.method)) return next();
    res.setHeader('Allow', template.allow);
    next(new AppError('method_not_allowed', `${req.method} is not allowed on ${req.path}; allowed: ${template.allow}`));
  };
}
