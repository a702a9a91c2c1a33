import { randomBytes } from 'node:crypto';
import type { identity } from '@secsvc/proto';
import { AppError, newId } from '@secsvc/shared';
import { PRINCIPAL, VALID_KEY } from './fake-identity';

/** The classes this fake takes for MFA done at the IdP (identity's list is longer; see its domain/sso.ts). */
const FAKE_MFA_CLASSES = ['https://refeds.org/profile/mfa', 'http://schemas.microsoft.com/claims/multipleauthn'];
/** The one TOTP code the fake's users answer a second step with. */
export const FAKE_TOTP_CODE = '123456';

/**
 * An in-memory identity with what the SSO endpoints call (the real one is covered by identity's sso tests
 * and the e2e): connections, AuthnRequest ids, remembered assertion ids, logins and failures, and the second
 * step of logins through connections that require MFA (one TOTP factor per user, answered by FAKE_TOTP_CODE).
 */
export class FakeSsoIdentity {
  readonly connections = new Map<string, identity.SsoConnection>();
  readonly requests = new Map<string, { connectionId: string; returnTo: string; binding: string }>();
  readonly assertions = new Set<string>();
  readonly logins: identity.CompleteSamlLoginRequest[] = [];
  readonly failures: identity.ReportSamlLoginFailureRequest[] = [];
  /** Second steps waiting (by token): the index of their login in `logins`. */
  readonly challenges = new Map<string, number>();
  readonly mfaLogins: identity.CompleteMfaLoginRequest[] = [];

  async authenticateApiKey(req: identity.AuthenticateApiKeyRequest): Promise<identity.ApiKeyPrincipal> {
    if (req.key !== VALID_KEY) throw new AppError('unauthorized', 'Invalid API key');
    return { ...PRINCIPAL };
  }

  async createSsoConnection(req: identity.CreateSsoConnectionRequest): Promise<identity.SsoConnection> {
    const now = new Date().toISOString();
    const c = { id: newId('sso'), environment: req.environment, ...req.fields!, createdAt: now, updatedAt: now };
    this.connections.set(c.id, c);
    return c;
  }

  async getSsoConnection(req: identity.GetSsoConnectionRequest): Promise<identity.SsoConnection> {
    const c = this.connections.get(req.id);
    if (!c || (!req.anyEnvironment && c.environment !== req.environment)) throw AppError.notFound('SSO connection');
    return c;
  }

  async findSsoConnection(req: identity.FindSsoConnectionRequest): Promise<identity.SsoConnection> {
    const c = [...this.connections.values()].find((x) => x.environment === req.environment && x.domains.includes(req.domain));
    if (!c) throw AppError.notFound('SSO connection');
    return c;
  }

  async listSsoConnections(req: identity.ListSsoConnectionsRequest): Promise<identity.ListSsoConnectionsResponse> {
    const connections = [...this.connections.values()].filter((c) => c.environment === req.environment).reverse();
    return { connections: connections.slice(0, req.limit), hasMore: connections.length > req.limit, nextCursor: '' };
  }

  async updateSsoConnection(req: identity.UpdateSsoConnectionRequest): Promise<identity.SsoConnection> {
    const c = await this.getSsoConnection({ environment: req.environment, id: req.id, anyEnvironment: false });
    const next = {
      ...c,
      ...(req.name !== undefined && { name: req.name }),
      ...(req.idpMetadataXml !== undefined && { idpMetadataXml: req.idpMetadataXml, idpEntityId: req.idpEntityId!, idpSsoUrl: req.idpSsoUrl!, idpCertificates: req.idpCertificates!.values }),
      ...(req.domains && { domains: req.domains.values }),
      ...(req.allowIdpInitiated !== undefined && { allowIdpInitiated: req.allowIdpInitiated }),
      ...(req.initiateLoginUrl !== undefined && { initiateLoginUrl: req.initiateLoginUrl }),
      ...(req.allowSha1Signatures !== undefined && { allowSha1Signatures: req.allowSha1Signatures }),
      ...(req.requireMfa !== undefined && { requireMfa: req.requireMfa }),
    };
    this.connections.set(c.id, next);
    return next;
  }

  async deleteSsoConnection(req: identity.DeleteSsoConnectionRequest): Promise<identity.DeleteSsoConnectionResponse> {
    await this.getSsoConnection({ ...req, anyEnvironment: false });
    this.connections.delete(req.id);
    return {};
  }

  async saveSamlRequest(req: identity.SaveSamlRequestRequest): Promise<identity.SaveSamlRequestResponse> {
    this.requests.set(req.requestId, { connectionId: req.connectionId, returnTo: req.returnTo, binding: req.binding });
    return {};
  }

  async takeSamlRequest(req: identity.TakeSamlRequestRequest): Promise<identity.TakeSamlRequestResponse> {
    const taken = this.requests.get(req.requestId);
    this.requests.delete(req.requestId);
    return { found: taken !== undefined, connectionId: taken?.connectionId ?? '', returnTo: taken?.returnTo ?? '', binding: taken?.binding ?? '' };
  }

  async completeSamlLogin(req: identity.CompleteSamlLoginRequest): Promise<identity.CompleteSamlLoginResponse> {
    const key = `${req.connectionId} ${req.assertionId}`;
    if (this.assertions.has(key)) {
      this.failures.push({ connectionId: req.connectionId, reason: 'replayed_assertion', email: req.email, ip: req.ip, userAgent: req.userAgent });
      throw new AppError('unauthorized', 'This SAML assertion was already used', [{ field: 'SAMLResponse', message: 'replayed_assertion' }]);
    }
    this.assertions.add(key);
    this.logins.push(req);
    const now = new Date().toISOString();
    if (this.connections.get(req.connectionId)?.requireMfa && !req.authnContextClassRefs.some((r) => FAKE_MFA_CLASSES.includes(r))) {
      const mfaToken = `mft_${randomBytes(32).toString('base64url')}`;
      this.challenges.set(mfaToken, this.logins.length - 1);
      // Users whose email starts with "nofactor" have no factor at all.
      const factors = req.email.startsWith('nofactor')
        ? []
        : [{ id: 'mfa_fake', environment: 'live', userId: 'user_x', type: 'totp', name: 'Phone', confirmed: true, createdAt: now, remainingCodes: 0, backedUp: false }];
      return { mfa: { mfaToken, expiresAt: now, factors, passkeyOptionsJson: '', enrollmentRequired: false }, userId: 'user_x', provisioned: true };
    }
    return { session: this.sessionOf(this.logins.length, now), userId: 'user_x', provisioned: true };
  }

  /** The session of the n-th login (its token ses_token_<n>: revokeSession finds its SAML subject). */
  private sessionOf(n: number, now: string): identity.CreatedSession {
    return { token: `ses_token_${n}`, session: { id: newId('ses'), environment: 'live', userId: 'user_x', metadataJson: '{}', createdAt: now, expiresAt: now, amr: [], acr: '' } };
  }

  async completeMfaLogin(req: identity.CompleteMfaLoginRequest): Promise<identity.CreatedSession> {
    const index = this.challenges.get(req.mfaToken);
    if (index === undefined) throw AppError.field('mfaToken', 'unknown, used or expired token');
    if (req.proof?.type !== 'totp' || req.proof.code !== FAKE_TOTP_CODE) {
      throw new AppError('unauthorized', 'The second factor was not accepted', [{ field: 'code', message: 'is not a current code' }]);
    }
    this.challenges.delete(req.mfaToken);
    this.mfaLogins.push(req);
    return this.sessionOf(index + 1, new Date().toISOString());
  }

  readonly logouts: identity.EndSamlSessionsRequest[] = [];
  readonly revokedTokens = new Set<string>();

  /** Session tokens are ses_token_<n> for the n-th login: revoking one tells its SAML subject, once. */
  async revokeSession(req: identity.RevokeSessionRequest): Promise<identity.RevokeSessionResponse> {
    const login = /^ses_token_(\d+)$/.test(req.token) ? this.logins[Number(req.token.slice(10)) - 1] : undefined;
    if (!login || this.revokedTokens.has(req.token)) return { revoked: false, saml: undefined };
    this.revokedTokens.add(req.token);
    return { revoked: true, saml: { connectionId: login.connectionId, nameId: login.nameId, nameIdFormat: login.nameIdFormat, sessionIndex: login.sessionIndex } };
  }

  async endSamlSessions(req: identity.EndSamlSessionsRequest): Promise<identity.EndSamlSessionsResponse> {
    const key = `${req.connectionId} logout:${req.requestId}`;
    if (this.assertions.has(key)) throw new AppError('unauthorized', 'This SAML LogoutRequest was already used', [{ field: 'SAMLRequest', message: 'replayed_request' }]);
    this.assertions.add(key);
    this.logouts.push(req);
    return { revoked: this.logins.filter((l) => l.connectionId === req.connectionId && l.nameId === req.nameId).length };
  }

  async reportSamlLoginFailure(req: identity.ReportSamlLoginFailureRequest): Promise<identity.ReportSamlLoginFailureResponse> {
    this.failures.push(req);
    return {};
  }
}
