import type { identity } from '@secsvc/proto';
import type { ApiKeyRow } from '../repositories/api-keys';
import type { OAuthClientRow } from '../repositories/oauth';
import type { ChallengeRow, FactorRow, SettingsRow } from '../repositories/mfa';
import type { SessionRow } from '../repositories/sessions';
import type { LoginChallenge, Proof } from '../services/mfa';
import type { SsoConnectionRow } from '../repositories/sso';
import type { UserRow } from '../repositories/users';

// How the RPCs answer with stored rows: one encoder per message, shared by every RPC that returns it.

export function toUserMessage(row: UserRow): identity.User {
  return {
    id: row.id,
    environment: row.environment,
    email: row.email,
    name: row.name,
    emailVerified: row.email_verified,
    roles: row.roles,
    metadataJson: row.metadata,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export function toApiKeyMessage(row: ApiKeyRow): identity.ApiKey {
  const graceOpen = row.previous_expires_at && row.previous_expires_at.getTime() > Date.now();
  return {
    id: row.id,
    environment: row.environment,
    name: row.name,
    type: row.type,
    plan: row.plan,
    rateLimit: row.rate_limit ?? undefined,
    prefix: row.prefix,
    last4: row.last4,
    createdAt: row.created_at.toISOString(),
    lastUsedAt: row.last_used_at?.toISOString(),
    expiresAt: row.expires_at?.toISOString(),
    revokedAt: row.revoked_at?.toISOString(),
    previousExpiresAt: graceOpen ? row.previous_expires_at!.toISOString() : undefined,
  };
}

export function toSessionMessage(row: SessionRow): identity.Session {
  return {
    id: row.id,
    environment: row.environment,
    userId: row.user_id,
    metadataJson: row.metadata,
    createdAt: row.created_at.toISOString(),
    expiresAt: row.expires_at.toISOString(),
    revokedAt: row.revoked_at?.toISOString(),
    amr: row.amr,
    acr: row.acr,
    mfaAt: row.mfa_at?.toISOString(),
  };
}

export function toFactorMessage(row: FactorRow): identity.MfaFactor {
  return {
    id: row.id,
    environment: row.environment,
    userId: row.user_id,
    type: row.kind,
    name: row.name,
    confirmed: row.confirmed_at !== null,
    createdAt: row.created_at.toISOString(),
    lastUsedAt: row.last_used_at?.toISOString(),
    remainingCodes: row.remaining,
    backedUp: row.backed_up ?? false,
  };
}

/** The second step a login (password or SAML) waits for. */
export const toMfaChallenge = (c: LoginChallenge): identity.MfaChallenge => ({
  mfaToken: c.token,
  expiresAt: c.expiresAt.toISOString(),
  factors: c.factors.map(toFactorMessage),
  passkeyOptionsJson: c.passkeyOptionsJson,
  enrollmentRequired: c.enrollmentRequired,
});

/** A login's answer: its session, or the challenge of its second step. */
export function toLoginResponse(result: { session?: { row: SessionRow; token: string }; challenge?: LoginChallenge }): identity.LoginResponse {
  if (result.session) return { session: toCreatedSession(result.session) };
  const c = result.challenge!;
  return {
    mfa: toMfaChallenge(c),
  };
}

export function toMfaSettingsMessage(row: SettingsRow): identity.MfaSettings {
  return { environment: row.environment, required: row.required, roles: row.roles, updatedAt: row.updated_at.toISOString() };
}

/** A session just opened, with its token (shown once). */
export const toCreatedSession = (opened: { row: SessionRow; token: string }): identity.CreatedSession => ({
  session: toSessionMessage(opened.row),
  token: opened.token,
});

export function toClientMessage(row: OAuthClientRow): identity.OAuthClient {
  return {
    id: row.id,
    environment: row.environment,
    name: row.name,
    type: row.type,
    redirectUris: row.redirect_uris,
    scopes: row.scopes,
    firstParty: row.first_party,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export function toConnectionMessage(row: SsoConnectionRow): identity.SsoConnection {
  return {
    id: row.id,
    environment: row.environment,
    name: row.name,
    idpMetadataXml: row.idp_metadata_xml,
    idpEntityId: row.idp_entity_id,
    idpSsoUrl: row.idp_sso_url,
    idpCertificates: row.idp_certificates,
    domains: row.domains,
    defaultRoles: row.default_roles,
    attributeMappingJson: row.attribute_mapping,
    allowIdpInitiated: row.allow_idp_initiated,
    initiateLoginUrl: row.initiate_login_url,
    allowSha1Signatures: row.allow_sha1_signatures,
    requireMfa: row.require_mfa,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** The OAuth endpoints' answer fields when nothing failed (an RFC 6749 error code and description otherwise). */
export const oauthOk = { error: '', errorDescription: '', status: 200, retryAfterSeconds: 0 };

/** A WebAuthn ceremony's challenge: its id, the options for the browser, its expiry. */
export const toPasskeyChallenge = (c: { challenge: ChallengeRow; optionsJson: string }): identity.PasskeyChallenge => ({
  challengeId: c.challenge.id,
  optionsJson: c.optionsJson,
  expiresAt: c.challenge.expires_at.toISOString(),
});

/** A factor's proof as the services take it (absent fields empty). */
export const proofOf = (p: identity.MfaProof | undefined): Proof => ({ type: p?.type ?? '', code: p?.code ?? '', credentialJson: p?.credentialJson ?? '' });
