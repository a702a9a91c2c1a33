import type { Request, Response } from 'express';
import { ACR_MFA, AppError, fieldErrors, type FieldError } from '@secsvc/shared';
import type { UserCache } from '../auth/user-cache';
import type { Principal, ServiceClients } from '../context';
import { DEFAULT_KEY_TYPES, type Route, type RouteResponse } from './route';
import { originHeaders } from '../http/origin';

// The steps that serve one /v1 route after authentication, in the order app.ts runs them: the caller's
// email, the OAuth scope, a credential at all, the policies (users), the key type (API keys), the input and
// the answer. Each step throws the AppError the caller gets.

/** The policy action of a call: from its method, unless the route names one (simulate). */
const ACTIONS: Record<Route['method'], string> = { get: 'read', post: 'create', put: 'update', patch: 'update', delete: 'delete' };

/** Who calls, from where and how they authenticated: the gRPC metadata services build events from. */
export function callHeaders(req: Request, principal: Principal): Record<string, string> {
  return {
    'x-actor-id': principal.id,
    'x-actor-type': principal.type,
    ...(principal.email && { 'x-actor-email': principal.email }),
    ...(principal.name && { 'x-actor-name': principal.name }),
    'x-auth-method': principal.clientId ? 'oauth' : principal.type === 'api_key' ? 'api_key' : principal.keyType === 'none' ? 'none' : principal.keyType,
    ...originHeaders(req),
  };
}

/**
 * A user principal whose credential does not say its email (an OAuth access token without the email scope)
 * gets it from the user cache: every event names a user actor by its email.
 */
export async function withEmail(
  principal: Principal,
  req: Request,
  identity: Pick<ServiceClients['identity'], 'getUser'>,
  deadlineMs: number,
  userCache: UserCache | undefined,
): Promise<Principal> {
  if (principal.type !== 'user' || principal.email || !userCache) return principal;
  const fetch = async () => {
    // In the request's trace (no audit event comes of it: a read).
    const user = await identity.getUser({ environment: principal.environment, id: principal.id }, { requestId: req.requestId, deadlineMs, headers: req.traceparent ? { traceparent: req.traceparent } : {} });
    return { roles: user.roles, email: user.email };
  };
  // A user deleted since its token was issued has no email to give; the call goes on and identity refuses it where it must.
  const facts = await userCache.get(principal.environment, principal.id, fetch).catch(() => undefined);
  return facts ? { ...principal, email: facts.email } : principal;
}

/** OAuth access tokens need the route's scope (RFC 6750 insufficient_scope otherwise); other credentials pass. */
export function authorizeScope(route: Pick<Route, 'scope'>, principal: Principal, res: Response): void {
  if (!principal.scopes) return;
  const needed = route.scope;
  if (needed && principal.scopes.includes(needed)) return;
  const why = needed ? `the scope ${needed} is required` : 'OAuth access tokens cannot call this endpoint';
  res.setHeader('WWW-Authenticate', `Bearer realm="secsvc", error="insufficient_scope"${needed ? `, scope="${needed}"` : ''}`);
  throw new AppError('forbidden', `Insufficient scope: ${why}`, [{ field: 'scope', message: needed ? `${needed} is required` : 'no scope grants this endpoint' }]);
}

/** Callers without a credential reach only the routes open to them (login pages). */
export function requireCredential(route: Pick<Route, 'anonymous'>, principal: Principal): void {
  if (principal.type === 'anonymous' && !route.anonymous) throw new AppError('unauthorized', 'Missing Authorization header (Bearer API key or session token)');
}

/** Where a user steps up (completes a multi-factor authentication on their session). */
export const STEP_UP_PATH = 'POST /v1/auth/step-up';

/** Where a step's answer headers go (the Express response). */
type HeaderSink = { setHeader: (name: string, value: string) => unknown };


/**
 * Users are authorized by the policies on every call (API keys act as administrators), unless the route lets
 * them act on the very credential they presented (their own session). The policies see whether the
 * credential carries a completed MFA and its age (mfa conditions); a denial that an MFA completed now would
 * lift is `mfa_required` (403) rather than `forbidden`, and an OAuth access token gets RFC 9470's
 * WWW-Authenticate challenge (insufficient_user_authentication) saying which acr and max_age to ask for.
 */
export async function authorizePolicy(
  route: Pick<Route, 'method' | 'action' | 'ownCredential' | 'alsoAuthorize'>,
  req: Request,
  principal: Principal,
  policy: Pick<ServiceClients['policy'], 'authorize'>,
  deadlineMs: number,
  res: HeaderSink,
  now: () => number = Date.now,
): Promise<void> {
  if (principal.type !== 'user' || route.ownCredential?.(req, principal)) return;
  const mfaAt = principal.mfaAt;
  const mfa = mfaAt !== undefined && Number.isFinite(mfaAt);
  const mfaAgeSeconds = mfa ? Math.max(0, Math.floor(now() / 1000 - mfaAt)) : 0;
  const decide = async (action: string, resource: string) => {
    const decision = await policy.authorize(
      { environment: principal.environment, userId: principal.id, roles: principal.roles ?? [], action, resource, ip: req.ip ?? '', mfa, mfaAgeSeconds },
      {
        requestId: req.requestId,
        deadlineMs,
        headers: {
          ...originHeaders(req),
          'x-auth-method': principal.keyType,
          ...(principal.email && { 'x-actor-email': principal.email }),
        },
      },
    );
    if (decision.allowed) return;
    if (decision.mfaRequired) throw mfaRequired(principal, decision.mfaMaxAgeSeconds, res);
    throw new AppError('forbidden', 'Denied by policy');
  };
  await decide(route.action ?? ACTIONS[route.method], req.path);
  // A part of the call that needs its own permission (assigning roles within an update).
  const also = route.alsoAuthorize?.(req);
  if (also) await decide(also.action, also.resource);
}

/**
 * The step-up answer: `mfa_required` naming the max age when there is one. A session steps up on itself; an
 * OAuth access token cannot, so it also gets the RFC 9470 challenge (the acr and max_age its client asks the
 * authorization server for in a new authorization request).
 */
function mfaRequired(principal: Principal, maxAgeSeconds: number, res: HeaderSink): AppError {
  const needed = `a multi-factor authentication${maxAgeSeconds > 0 ? ` within the last ${maxAgeSeconds} seconds` : ''} is required`;
  const jwt = principal.keyType === 'jwt';
  if (jwt) {
    res.setHeader(
      'WWW-Authenticate',
      `Bearer error="insufficient_user_authentication", error_description="${needed[0]!.toUpperCase()}${needed.slice(1)}", acr_values="${ACR_MFA}"${maxAgeSeconds > 0 ? `, max_age=${maxAgeSeconds}` : ''}`,
    );
  }
  return new AppError(
    'mfa_required',
    `Multi-factor authentication required${maxAgeSeconds > 0 ? ` (completed within the last ${maxAgeSeconds} seconds)` : ''}: step up with ${STEP_UP_PATH}`,
    [{ field: 'mfa', message: jwt ? `${needed}: request a new access token with acr_values=${ACR_MFA}${maxAgeSeconds > 0 ? ` and max_age=${maxAgeSeconds}` : ''}` : needed }],
  );
}

/** API keys call only the routes that allow their type (secret and test keys unless the route says otherwise). */
export function checkKeyType(route: Pick<Route, 'keyTypes' | 'method' | 'path'>, principal: Principal): void {
  if (principal.type === 'api_key' && !(route.keyTypes ?? DEFAULT_KEY_TYPES).includes(principal.keyType as 'secret')) {
    throw new AppError('forbidden', `A ${principal.keyType} key cannot call ${route.method.toUpperCase()} ${route.path}`);
  }
}

/**
 * Path, query and body validated together: every fault of the request is named in one answer. No body at
 * all is validated as an empty object, so each missing field is named.
 */
export function validate(route: Pick<Route, 'params' | 'query' | 'body'>, req: Pick<Request, 'params' | 'query' | 'body'>): Parameters<Route['handle']>[0] {
  const faults: FieldError[] = [];
  const parse = (schema: Route['body'], value: unknown) => {
    if (!schema) return undefined;
    const result = schema.safeParse(value);
    if (result.success) return result.data as unknown;
    faults.push(...fieldErrors(result.error));
    return undefined;
  };
  const input = { params: parse(route.params, req.params) ?? {}, query: parse(route.query, req.query ?? {}) ?? {}, body: parse(route.body, req.body ?? {}) };
  if (faults.length) throw AppError.invalid(faults);
  return input as Parameters<Route['handle']>[0];
}

/** The handler's answer: JSON, or no body at all. */
export function respond(res: Response, out: RouteResponse): void {
  if (out.body === undefined) res.status(out.status).end();
  else res.status(out.status).json(out.body);
}
