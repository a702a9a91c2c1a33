import type { NextFunction, Request, Response } from 'express';
import { AppError } from '@secsvc/shared';
import type { AuthCache } from '../auth/auth-cache';
import type { JwtVerifier } from '../auth/jwt-verifier';
import type { Principal, ServiceClients } from '../context';
import { originHeaders } from '../http/origin';

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
  }
}

const BEARER = /^Bearer ([A-Za-z0-9_.-]{1,4096})$/;
const API_KEY = /^svc_(sk|pk|test)_/;
const SESSION_TOKEN = /^sst_/;
const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

const env = (e: string): 'live' | 'test' => (e === 'test' ? 'test' : 'live');
const until = (iso?: string) => (iso ? Date.parse(iso) : undefined);

/**
 * A JWT access token, verified locally. Its session's revocation must be knowable, so while identity's
 * change stream is down JWTs are refused with 503 rather than trusted blindly.
 */
async function verifyJwt(token: string, jwt: JwtVerifier, cache: AuthCache | undefined): Promise<Principal> {
  if (!cache?.isLive) throw new AppError('unavailable', 'Access tokens cannot be checked for revocation right now; retry shortly');
  const claims = await jwt.verify(token);
  if (cache.isSessionRevoked(claims.sid)) throw new AppError('unauthorized', 'Invalid access token: its session has ended');
  const roles = Array.isArray(claims.roles) ? claims.roles.filter((r): r is string => typeof r === 'string') : [];
  // OAuth access tokens carry their scopes and client; without them (session JWTs) nothing is narrowed.
  const oauth = typeof claims.scope === 'string' && typeof claims.client_id === 'string' ? { scopes: claims.scope.split(' '), clientId: claims.client_id } : {};
  if (oauth.clientId && claims.sub === oauth.clientId) {
    // client_credentials: the token acts as the client, like a secret key of its environment limited to its scopes.
    const keyType = env(claims.env) === 'test' ? 'test' : 'secret';
    return { type: 'api_key', id: oauth.clientId, credentialId: claims.sid, keyType, environment: env(claims.env), plan: 'pro', ...oauth };
  }
  const email = typeof claims.email === 'string' ? { email: claims.email } : {};
  return { type: 'user', id: claims.sub, credentialId: claims.sid, keyType: 'jwt', environment: env(claims.env), plan: 'pro', roles, ...email, ...oauth, ...mfaOfClaims(claims) };
}

/** A token's amr (RFC 8176) and, when it says MFA was done, its auth_time as the time of that MFA. */
function mfaOfClaims(claims: Record<string, unknown>): Pick<Principal, 'amr' | 'mfaAt'> {
  const amr = Array.isArray(claims.amr) ? claims.amr.filter((m): m is string => typeof m === 'string') : [];
  const mfaAt = amr.includes('mfa') && typeof claims.auth_time === 'number' && Number.isFinite(claims.auth_time) ? claims.auth_time : undefined;
  return { ...(amr.length ? { amr } : {}), ...(mfaAt !== undefined ? { mfaAt } : {}) };
}

/** Resolves a bearer credential with the identity service: an API key or a session token. */
async function resolve(clients: ServiceClients, token: string, req: Request, deadlineMs: number) {
  // Where the attempt came from, for the auth.failed events identity records on refusals.
  const opts = {
    requestId: req.requestId,
    deadlineMs,
    headers: originHeaders(req),
  };
  if (API_KEY.test(token)) {
    const p = await clients.identity.authenticateApiKey({ key: token }, opts);
    const principal: Principal = {
      type: 'api_key',
      id: p.keyId,
      name: p.name,
      credentialId: p.keyId,
      keyType: p.keyType as Principal['keyType'],
      environment: env(p.environment),
      plan: p.plan,
      rateLimit: p.rateLimit,
    };
    return { principal, expiresAt: until(p.expiresAt) };
  }
  if (SESSION_TOKEN.test(token)) {
    const s = await clients.identity.authenticateSession({ token }, opts);
    const principal: Principal = {
      type: 'user',
      id: s.userId,
      email: s.email,
      credentialId: s.sessionId,
      keyType: 'session',
      environment: env(s.environment),
      plan: 'pro',
      roles: s.roles,
      ...(s.amr.length ? { amr: s.amr } : {}),
      ...(s.mfaAt ? { mfaAt: Math.floor(Date.parse(s.mfaAt) / 1000) } : {}),
    };
    return { principal, expiresAt: until(s.expiresAt) };
  }
  throw new AppError('unauthorized', 'Unrecognised credential: expected an API key or a session token');
}

/**
 * Every /v1 call carries `Authorization: Bearer <API key | session token>`; the identity service resolves it,
 * and the answer is cached while identity's credential change stream is live (see auth/auth-cache.ts).
 */
export function authenticate(
  clients: ServiceClients,
  deadlineMs: number,
  cache?: AuthCache,
  anonymousRoutes = new Set<string>(),
  jwt?: JwtVerifier,
) {
  return async (req: Request, _res: Response, next: NextFunction): Promise<void> => {
    const header = req.get('authorization');
    if (!header) {
      // Routes for login pages may be called without a credential ("POST /auth/login").
      if (anonymousRoutes.has(`${req.method} ${req.path}`)) return next();
      return next(new AppError('unauthorized', 'Missing Authorization header (Bearer API key or session token)'));
    }
    const match = BEARER.exec(header);
    if (!match) return next(new AppError('unauthorized', 'Authorization header must be "Bearer <credential>"'));
    const token = match[1]!;
    if (JWT.test(token)) {
      if (!jwt) return next(new AppError('unauthorized', 'Access tokens are not accepted here'));
      try {
        req.principal = await verifyJwt(token, jwt, cache);
        return next();
      } catch (err) {
        if (err instanceof AppError && err.code === 'unauthorized') {
          // identity keeps the audit trail: report the refusal (fire and forget), with the reason only
          const reason = (err as AppError & { reason?: string }).reason ?? 'revoked_session';
          void clients.identity
            .reportAuthFailure(
              { credential: 'jwt', reason },
              { requestId: req.requestId, deadlineMs, headers: originHeaders(req) },
            )
            .catch(() => undefined);
        }
        return next(err);
      }
    }
    const cached = cache?.get(token);
    if (cached) {
      req.principal = cached;
      return next();
    }
    const generation = cache?.generation ?? 0;
    try {
      const { principal, expiresAt } = await resolve(clients, token, req, deadlineMs);
      req.principal = principal;
      cache?.set(token, principal, expiresAt, generation);
      next();
    } catch (err) {
      next(err);
    }
  };
}
