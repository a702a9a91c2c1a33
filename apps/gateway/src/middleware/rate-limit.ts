import { createHash } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Counter } from 'prom-client';
import { AppError, toAppError, type Metrics } from '@secsvc/shared';
import type { Principal } from '../context';
import type { Decision } from '../rate-limit/gcra';
import { RateLimitUnavailable, type RateLimiter, type StoreHealth } from '../rate-limit/limiter';
import { subjectOf, type RateLimitPolicy, type Subject } from '../rate-limit/subjects';

/**
 * Called on the first refusal of a subject in a window (rate_limit.exceeded); that 429 is answered once the
 * report has settled, so a gateway that stops right after answering has not lost the event. Never rejects.
 */
export type ExceededReporter = (req: Request, subject: Subject, decision: Decision) => Promise<void> | void;

interface Refused {
  limit: number;
  reset: number;
  /** When the next request may pass (ms on the limiter's clock). */
  until: number;
  plan: string;
}

const PLANS = new Set(['free', 'pro', 'enterprise']);

/** The `plan` label of a decision: the API key's plan, `user` (sessions, JWTs) or `anonymous` (by client ip). */
function planOf(subject: Subject, principal: Principal | undefined): string {
  if (subject.kind !== 'api_key') return subject.kind === 'user' ? 'user' : 'anonymous';
  return principal && PLANS.has(principal.plan) ? principal.plan : 'other';
}

const storeErrors = (metrics: Metrics) => metrics.counter('ratelimit_store_errors_total', 'Rate-limit store operations that failed (Redis or memory)', []);

/** `health` that also counts each failed store call in ratelimit_store_errors_total (give it to the RateLimiter). */
export function countedStoreHealth(metrics: Metrics, health?: StoreHealth): StoreHealth {
  const errors = storeErrors(metrics);
  return {
    failed: (use, err) => {
      errors.inc();
      health?.failed(use, err);
    },
    succeeded: () => health?.succeeded(),
  };
}

/** ratelimit_decisions_total{plan,decision}, with its label children kept (one map lookup per request). */
function decisionCounter(metrics: Metrics | undefined): (plan: string, allowed: boolean) => void {
  if (!metrics) return () => undefined;
  const counter = metrics.counter('ratelimit_decisions_total', 'Rate-limit decisions by plan and decision (allowed, limited)', ['plan', 'decision']);
  storeErrors(metrics);
  const children = new Map<string, Counter.Internal>();
  return (plan, allowed) => {
    const key = `${plan}:${allowed}`;
    let child = children.get(key);
    if (!child) children.set(key, (child = counter.labels({ plan, decision: allowed ? 'allowed' : 'limited' })));
    child.inc();
  };
}

const MAX_REFUSED = 10_000;
const digest = (value: string) => createHash('sha256').update(value).digest('base64url');

function setHeaders(res: Response, limit: number, remaining: number, reset: number): void {
  res.setHeader('X-RateLimit-Limit', String(limit));
  res.setHeader('X-RateLimit-Remaining', String(remaining));
  res.setHeader('X-RateLimit-Reset', String(reset));
  res.locals.rateLimited = true;
}

const refusal = (retryAfter: number) =>
  new AppError('rate_limited', `Rate limit exceeded; retry in ${retryAfter} s`, [], retryAfter);

/**
 * Rate limiting of the HTTP surface (everything but the /healthz and /readyz probes):
 * - `apply` (after authentication; before anything outside /v1) spends one request of the caller's budget:
 *   its API key (by plan), its user (session or JWT), or its client ip (no credential), and sets
 *   X-RateLimit-Limit/Remaining/Reset;
 * - `onError` does the same, by client ip, for responses that failed before `apply` ran (401 for a bad
 *   credential, 404 outside /v1), so every response carries the headers;
 * - `gate` (before authentication) refuses at once a credential (or anonymous ip) this gateway has just
 *   refused, until its Retry-After moment. Under GCRA a refusal changes nothing and nothing can pass before
 *   that moment, so this answer is exactly what the store would say, without authenticating or asking it.
 * A refusal is 429 `rate_limited` with Retry-After and Remaining 0; it reaches no service (the request's
 * operation is never called; only the first refusal of a window may need its credential authenticated).
 */
export function rateLimits(limiter: RateLimiter, policy: RateLimitPolicy, report?: ExceededReporter, metrics?: Metrics) {
  const refused = new Map<string, Refused>();
  const decided = decisionCounter(metrics);

  /** Refusals are remembered per credential (any ip), or per ip for calls without a valid one. */
  const memoKey = (req: Request, subject: Subject['kind']) => {
    const auth = req.get('authorization');
    return subject === 'ip' ? `i:${req.ip ?? ''}:${auth ? digest(auth) : ''}` : `c:${digest(auth ?? '')}`;
  };

  const remember = (key: string, d: Decision, plan: string) => {
    if (refused.size >= MAX_REFUSED) refused.delete(refused.keys().next().value!);
    refused.set(key, { limit: d.limit, reset: d.reset, until: limiter.nowMs() + d.retryAfter * 1000, plan });
  };

  /** Spends one request of `subject`'s budget; the error to pass on when refused (or unavailable). */
  const spend = async (req: Request, res: Response, subject: Subject, principal: Principal | undefined): Promise<AppError | undefined> => {
    const plan = planOf(subject, principal);
    let d: Decision;
    try {
      d = await limiter.consume(subject.subject, subject.limit);
    } catch (err) {
      if (!(err instanceof RateLimitUnavailable)) throw err;
      // Fail-closed: nothing may pass until the store answers again.
      setHeaders(res, err.limit, 0, Math.ceil(limiter.nowMs() / 1000) + 1);
      return err;
    }
    setHeaders(res, d.limit, d.remaining, d.reset);
    decided(plan, d.allowed);
    if (d.allowed) return undefined;
    remember(memoKey(req, subject.kind), d, plan);
    if (d.report) await report?.(req, subject, d);
    return refusal(d.retryAfter);
  };

  const gate = (req: Request, res: Response, next: NextFunction): void => {
    if (refused.size === 0) return next();
    const auth = req.get('authorization');
    const keys = auth ? [memoKey(req, 'api_key'), memoKey(req, 'ip')] : [memoKey(req, 'ip')];
    const now = limiter.nowMs();
    for (const key of keys) {
      const r = refused.get(key);
      if (!r) continue;
      if (r.until <= now) {
        refused.delete(key);
        continue;
      }
      setHeaders(res, r.limit, 0, r.reset);
      decided(r.plan, false);
      return next(refusal(Math.max(1, Math.ceil((r.until - now) / 1000))));
    }
    next();
  };

  const apply = (req: Request, res: Response, next: NextFunction): void => {
    if (res.locals.rateLimited) return next();
    spend(req, res, subjectOf(req.principal, req.ip ?? '', policy), req.principal).then((err) => next(err), next);
  };

  /** `apply` for every path outside `prefix` (whose routes apply it themselves, after authentication). */
  const applyOutside = (prefix: string) => (req: Request, res: Response, next: NextFunction) =>
    req.path === prefix || req.path.startsWith(`${prefix}/`) ? next() : apply(req, res, next);

  const onError = (err: unknown, req: Request, res: Response, next: NextFunction): void => {
    if (res.locals.rateLimited || res.headersSent) return next(err);
    // A credential that could not be checked (identity unavailable) was not refused: the caller's budget is its
    // key's, unknown for now, and the ip's anonymous budget is for missing and refused credentials only.
    if (toAppError(err).httpStatus >= 500) return next(err);
    spend(req, res, subjectOf(undefined, req.ip ?? '', policy), undefined).then((refusedErr) => next(refusedErr ?? err), next);
  };

  return { gate, apply, applyOutside, onError };
}
