import type { Principal } from '../context';

/** Requests per minute of the plans (SPEC "Limits"); enterprise keys carry their own (`rateLimit`). */
export const PLAN_LIMITS: Record<string, number> = { free: 100, pro: 1_000 };

export interface RateLimitPolicy {
  /** Per client ip, for calls without a (valid) credential. */
  anonymousPerMinute: number;
  /** Per user, for session and JWT callers (the pro plan's 1,000 by default). */
  userPerMinute: number;
  /** Enterprise keys created without a custom `rateLimit`. */
  enterprisePerMinute: number;
}

export interface Subject {
  /** The bucket: key:<key id>, user:<user id> or ip:<address>. */
  subject: string;
  limit: number;
  kind: 'api_key' | 'user' | 'ip';
  /** The key id, user id or ip. */
  id: string;
}

/** Whose budget a request spends: its API key, its user, or (no valid credential) its client ip. */
export function subjectOf(principal: Principal | undefined, ip: string, policy: RateLimitPolicy): Subject {
  if (principal?.type === 'api_key') {
    const limit =
      principal.plan === 'enterprise' ? (principal.rateLimit ?? policy.enterprisePerMinute) : (PLAN_LIMITS[principal.plan] ?? PLAN_LIMITS.free!);
    return { subject: `key:${principal.id}`, limit, kind: 'api_key', id: principal.id };
  }
  if (principal?.type === 'user') return { subject: `user:${principal.id}`, limit: policy.userPerMinute, kind: 'user', id: principal.id };
  return { subject: `ip:${ip}`, limit: policy.anonymousPerMinute, kind: 'ip', id: ip };
}
