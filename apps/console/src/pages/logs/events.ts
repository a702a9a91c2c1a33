// The event kinds the API records (the EventKind values of its OpenAPI document), for the filter's checkboxes.
// The list is checked against the typed client at compile time: a kind the API adds or drops fails `tsc` here.
import type { operations } from '@secsvc/client';

export type EventKind = NonNullable<operations['createLogExport']['requestBody']['content']['application/json']['events']>[number];

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
] as const satisfies readonly EventKind[];

// Every kind of the API is listed (the other direction is the `satisfies` above).
type Unlisted = Exclude<EventKind, (typeof EVENT_KINDS)[number]>;
const everyKindListed: [Unlisted] extends [never] ? true : Unlisted = true;
void everyKindListed;

/** The kinds grouped by what they are about (the part before the first dot: user, session, api_key, ...). */
export function eventGroups(): { name: string; kinds: EventKind[] }[] {
  const groups = new Map<string, EventKind[]>();
  for (const k of EVENT_KINDS) {
    const name = k.slice(0, k.indexOf('.'));
    groups.set(name, [...(groups.get(name) ?? []), k]);
  }
  return [...groups].map(([name, kinds]) => ({ name, kinds }));
}
