/**
 * Every audit event kind the product emits (README "Event kinds"), one catalogue for the emitters, the
 * `events` filters of GET /v1/logs and POST /v1/logs/export, and the OpenAPI document (a zod enum of it).
 * `event-kinds.spec.ts` scans the source for emitted kinds, so a new kind cannot be emitted without landing here.
 */
export const EVENT_KINDS = [
  'user.created',
  'user.updated',
  'user.deleted',
  'user.password_changed',
  'user.login',
  'user.logout',
  'user.password_reset.requested',
  'user.password_reset.completed',
  'user.password_reset.failed',
  'user.mfa.factor_added',
  'user.mfa.factor_updated',
  'user.mfa.factor_removed',
  'user.mfa.failed',
  'user.mfa.step_up',
  'mfa.settings.updated',
  'session.created',
  'session.revoked',
  'api_key.created',
  'api_key.rotated',
  'api_key.revoked',
  'auth.failed',
  'rate_limit.exceeded',
  'sso_connection.created',
  'sso_connection.updated',
  'sso_connection.deleted',
  'oauth_client.created',
  'oauth_client.updated',
  'oauth_client.deleted',
  'oauth.consent.granted',
  'oauth.token.issued',
  'oauth.token.revoked',
  'oauth.refresh_reuse_detected',
  'policy.created',
  'policy.updated',
  'policy.deleted',
  'authz.denied',
  'log.export.created',
  'log.export.completed',
  'log.export.failed',
  'log.export.downloaded',
] as const;

export type EventKind = (typeof EVENT_KINDS)[number];

const KINDS: ReadonlySet<string> = new Set(EVENT_KINDS);

/** Whether `value` is a kind the product emits. */
export const isEventKind = (value: string): value is EventKind => KINDS.has(value);
