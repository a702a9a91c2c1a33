import type { NextFunction, Request, Response } from 'express';
import { AppError } from '@secsvc/shared';
import type { AuthCache } from '../auth-cache';
import type { Principal, ServiceClients } from '../context';

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
  }
}

const BEARER = /^Bearer ([A-Za-z0-9_-]{1,256})$/;

/** Every /v1 call carries `Authorization: Bearer <API key>`; the identity service resolves it. */
export function authenticate(clients: ServiceClients, deadlineMs: number, cache?: AuthCache) {
  return async (req: Request, _res: Response, next: NextFunction): Promise<void> => {
    const header = req.get('authorization');
    if (!header) return next(new AppError('unauthorized', 'Missing Authorization header (Bearer API key)'));
    const match = BEARER.exec(header);
    if (!match) return next(new AppError('unauthorized', 'Authorization header must be "Bearer <API key>"'));
    const key = match[1]!;
    const cached = cache?.get(key);
    if (cached) {
      req.principal = cached;
      return next();
    }
    const generation = cache?.generation ?? 0;
    try {
      const p = await clients.identity.authenticateApiKey({ key }, { requestId: req.requestId, deadlineMs });
      req.principal = {
        type: 'api_key',
        id: p.keyId,
        keyType: p.keyType,
        environment: p.environment === 'test' ? 'test' : 'live',
        plan: p.plan,
      };
      cache?.set(key, req.principal, p.expiresAt ? Date.parse(p.expiresAt) : undefined, generation);
      next();
    } catch (err) {
      next(err);
    }
  };
}
