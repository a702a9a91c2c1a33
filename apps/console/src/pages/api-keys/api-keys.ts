// What the API key pages compute before and after the API: a key's state, the create form's optional fields read
// from their inputs, and the grace periods a rotation offers.
import type { Schemas } from '@secsvc/client';

export type ApiKey = Schemas['ApiKey'];
export type KeyType = ApiKey['type'];
export type Plan = ApiKey['plan'];

export type KeyStatus = 'active' | 'revoked' | 'expired';

/** Revoked wins over expired; a key whose expiry has passed no longer works either. */
export function keyStatus(key: Pick<ApiKey, 'revokedAt' | 'expiresAt'>, now = Date.now()): KeyStatus {
  if (key.revokedAt) return 'revoked';
  if (key.expiresAt && Date.parse(key.expiresAt) <= now) return 'expired';
  return 'active';
}

export const KEY_TYPES: { value: KeyType; label: string; hint: string }[] = [
  { value: 'secret', label: 'Secret', hint: 'svc_sk_…: server-side calls to the whole API' },
  { value: 'public', label: 'Public', hint: 'svc_pk_…: browsers; only sessions/verify, tokens and auth' },
  { value: 'test', label: 'Test', hint: 'svc_test_…: the whole API in the test environment' },
];

export const PLANS: { value: Plan; label: string }[] = [
  { value: 'free', label: 'Free' },
  { value: 'pro', label: 'Pro' },
  { value: 'enterprise', label: 'Enterprise (custom rate limit)' },
];

/** The grace periods of a rotation (the API takes 0s to 7d; 24h when none is given). */
export const GRACE_PERIODS: { value: string; label: string }[] = [
  { value: '0s', label: 'None: the previous secret stops working now' },
  { value: '1h', label: '1 hour' },
  { value: '24h', label: '24 hours' },
  { value: '7d', label: '7 days' },
];
export const DEFAULT_GRACE = '24h';

export const graceLabel = (value: string) => GRACE_PERIODS.find((g) => g.value === value)?.label ?? value;

type Read<T> = { ok: true; value: T | undefined } | { ok: false; message: string };

/** The rate limit input: empty for the plan's default, else a whole number of requests per minute (the API checks the range). */
export function readRateLimit(text: string): Read<number> {
  const t = text.trim();
  if (t === '') return { ok: true, value: undefined };
  if (!/^\d+$/.test(t)) return { ok: false, message: 'must be a whole number of requests per minute' };
  return { ok: true, value: Number(t) };
}

/**
 * The expiry input (`<input type="datetime-local">`, the reader's local time, e.g. 2030-01-31T14:05): empty for
 * never, else the ISO 8601 UTC instant the API takes (it checks that it is in the future, within 10 years).
 */
export function readExpiry(local: string): Read<string> {
  const t = local.trim();
  if (t === '') return { ok: true, value: undefined };
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?$/.test(t)) return { ok: false, message: 'must be a date and time' };
  const d = new Date(t); // no offset: local time, as the input shows it
  if (Number.isNaN(d.getTime())) return { ok: false, message: 'must be a date and time' };
  return { ok: true, value: d.toISOString() };
}
