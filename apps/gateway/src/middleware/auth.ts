import type { NextFunction, Request, Response } from 'express';
import { AppError } from '@secsvc/shared';
import type { Principal, ServiceClients } from '../context';

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
  }
}

const BEARER = /^Bearer ([A-Za-z0-9_-]{1,256})$/;

/** Every /v1 call carries `Authorization: Bearer <API key>`; the identity service resolves it. */
export function authenticate(clients: ServiceClients, deadlineMs: number) {
  return async (req: Request, _res: Response, next: NextFunction): Promise<void> => {
    const header = req.get('authorization');
    if (!header) return next(new AppError('unauthorized', 'Missing Authorization header (Bearer API key)'));
    const match = BEARER.exec(header);
    if (!match) return next(new AppError('unauthorized', 'Authorization header must be "Bearer <API key>"'));
    try {
      const p = await clients.identity.authenticateApiKey({ key: match[1]! }, { requestId: req.requestId, deadlineMs });
      req.principal = {
        type: 'api_key',
        id: p.keyId,
        keyType: p.keyType,
        environment: p.environment === 'test' ? 'test' : 'live',
        plan: p.plan,
      };
      next();
    } catch (err) {
      next(err);
    }
  };
}
