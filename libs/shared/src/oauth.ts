// What the identity service and the gateway both know about OAuth: the scopes and the RFC 7662 answer for
// an access token's claims.

/** The acr of an authentication with one factor, and of a multi-factor one (acr_values=ACR_MFA asks for a step-up). */
export const ACR_SINGLE_FACTOR = 'urn:secsvc:acr:1fa';
export const ACR_MFA = 'urn:secsvc:acr:mfa';

/** Every scope the authorization server knows: OpenID Connect's and one per API area. */
export const OAUTH_SCOPES = [
  'openid',
  'profile',
  'email',
  'offline_access',
  'read:users',
  'write:users',
  'read:policies',
  'write:policies',
  'read:logs',
  'export:logs',
  'read:api_keys',
  'write:api_keys',
  'read:clients',
  'write:clients',
  'read:sso',
  'write:sso',
] as const;

/**
 * The administrative scopes: each lets a token make credentials as strong as an administrator's (an API key,
 * a client, an SSO connection that signs users in). Only first-party clients may be registered with them, so
 * no third-party application can obtain one through a consent page.
 */
export const ADMINISTRATIVE_SCOPES: readonly string[] = ['write:api_keys', 'write:clients', 'write:sso'];

/**
 * The RFC 7662 answer for an active access token, from its verified claims: with a user's tokens, how the user
 * authenticated (amr, acr, auth_time; absent claims stay absent, as JSON drops undefined).
 */
export function activeAccessToken(claims: Record<string, unknown>): Record<string, unknown> {
  return {
    active: true,
    token_type: 'Bearer',
    scope: claims.scope,
    client_id: claims.client_id,
    sub: claims.sub,
    aud: claims.aud,
    iss: claims.iss,
    exp: claims.exp,
    iat: claims.iat,
    jti: claims.jti,
    amr: claims.amr,
    acr: claims.acr,
    auth_time: claims.auth_time,
  };
}
