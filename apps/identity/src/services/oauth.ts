import { activeAccessToken, callerOf, eventOfCall, isForeignKeyViolation, newId, type CallContext, type EventInput } from '@secsvc/shared';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import type { IdentityConfig } from '../config';
import { hashesEqual, hashKey, looksLikeKey } from '../domain/api-keys';
import { throttleWait } from '../domain/login-throttle';
import {
  actorOf,
  apiScopesOf,
  atHash,
  authenticationClaims,
  authenticationOfSession,
  checkAuthorization,
  clientThrottleKey,
  CODE_PREFIX,
  CODE_TTL_SECONDS,
  failure,
  grantTarget,
  hashClientSecret,
  hashCode,
  hashRefreshToken,
  isFailure,
  looksLikeClientId,
  parseScope,
  pkceMatches,
  redirectWith,
  REFRESH_TOKEN_PREFIX,
  scopesOutside,
  sessionAuthTime,
  userClaims,
  USER_SCOPES,
  type AccessClaims,
  type AuthorizationParams,
  type Failure,
  type IssuedTokens,
} from '../domain/oauth';
import { generateOpaqueToken, looksLikeOpaqueToken, sameHash } from '../domain/opaque-tokens';
import { hashSessionToken, looksLikeSessionToken } from '../domain/sessions';
import { signJwt, type SigningKeyStore } from '../domain/signing-keys';
import type {
  CodeRow,
  GrantRow,
  NewGrant,
  oauthClientsRepository,
  OAuthClientRow,
  oauthCodesRepository,
  oauthConsentsRepository,
  oauthGrantsRepository,
  oauthRefreshTokensRepository,
} from '../repositories/oauth';
import type { sessionsRepository } from '../repositories/sessions';
import type { UserRow } from '../repositories/users';
import type { ApiKeysRepository } from './api-keys';
import type { OAuthClientCache } from './oauth-client-cache';
import type { PasswordsRepository } from './passwords';
import type { Database, Db, Outbox } from './ports';
import type { UsersRepository } from './users';

export interface OAuthDeps {
  db: Database;
  clients: Pick<typeof oauthClientsRepository, 'get'>;
  /** Clients kept while the credential change feed is live (none: each request reads its client). */
  clientCache?: OAuthClientCache;
  codes: Pick<typeof oauthCodesRepository, 'insert' | 'find' | 'lock' | 'markUsed' | 'redeem'>;
  grants: Pick<typeof oauthGrantsRepository, 'issue' | 'issueBatched' | 'get' | 'revoke'>;
  refreshTokens: Pick<typeof oauthRefreshTokensRepository, 'findForRotation' | 'lock' | 'find' | 'rotate'>;
  consents: Pick<typeof oauthConsentsRepository, 'get' | 'grant'>;
  sessions: Pick<typeof sessionsRepository, 'findActiveByHash' | 'findActiveById'>;
  users: Pick<UsersRepository, 'get'>;
  /** Introspection answers for API keys too. */
  apiKeys: Pick<ApiKeysRepository, 'findByHash'>;
  /** Failed client authentications are counted like failed logins. */
  throttle: Pick<PasswordsRepository, 'recordFailure' | 'failures'>;
  keys: Pick<SigningKeyStore, 'get'>;
  outbox: Outbox;
  config: Pick<IdentityConfig, 'SERVER_SECRET' | 'ISSUER' | 'JWT_AUDIENCE' | 'ACCESS_TOKEN_TTL_SECONDS' | 'OAUTH_REFRESH_TOKEN_TTL_SECONDS'>;
}

/** How a client authenticates (RFC 6749 2.3): its id, and its secret by HTTP Basic or in the body, or none. */
export interface ClientAuthentication {
  clientId: string;
  clientSecret: string;
  clientAuthMethod: string;
}

export interface AuthorizationRequest extends AuthorizationParams {
  clientId: string;
  redirectUri: string;
  /** The browser's login session at the authorization server, if any. */
  sessionToken: string;
  /** Right after the login form was accepted. */
  freshLogin: boolean;
  /** The consent form's answer: allow, deny, or '' when none was submitted. */
  consent: string;
}

/** What the authorization endpoint shows or where it sends the browser. */
export interface Authorization {
  outcome: 'error_page' | 'redirect' | 'login' | 'consent';
  error: string;
  errorDescription: string;
  redirectTo: string;
  clientName: string;
  environment: string;
  redirectUri: string;
  scopes: string[];
  userEmail: string;
}

export interface TokenRequest extends ClientAuthentication {
  grantType: string;
  code: string;
  redirectUri: string;
  codeVerifier: string;
  refreshToken: string;
  scope: string;
  repeatedParams: string[];
}

/** What a grant's statement decided; its tokens are signed after it, holding no connection. */
interface Decided {
  grant: GrantRow;
  scopes: string[];
  user: UserRow | undefined;
  refreshToken: string;
  nonce?: string | null;
}

const blank: Authorization = {
  outcome: 'error_page',
  error: '',
  errorDescription: '',
  redirectTo: '',
  clientName: '',
  environment: '',
  redirectUri: '',
  scopes: [],
  userEmail: '',
};

/** An error shown on the server's own page: the redirect URI cannot be trusted (RFC 6749 4.1.2.1). */
const errorPage = (error: string, errorDescription: string): Authorization => ({ ...blank, outcome: 'error_page', error, errorDescription });

const invalidGrant = (description: string) => failure('invalid_grant', description);

const INACTIVE = { active: false };
const seconds = (d: Date) => Math.floor(d.getTime() / 1000);
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** An OAuth event (oauth.*): the actor given, the caller's context. */
function oauthEvent(
  call: CallContext,
  type: string,
  environment: string,
  actor: { id?: string; email?: string; type: string },
  target: { id: string; type: string } | undefined,
  result: 'success' | 'failure',
  metadata: Record<string, unknown>,
): EventInput {
  return eventOfCall(call, { actor, environment, type, target, result, metadata: { authMethod: 'oauth', ...metadata } });
}

/** Why a code cannot be redeemed by this request (redirect URI or PKCE), or undefined when it can. */
function codeMismatch(code: { redirect_uri: string; code_challenge: string | null }, req: TokenRequest): string | undefined {
  if (req.redirectUri !== code.redirect_uri) return 'redirect_uri: does not match the authorization request';
  if (code.code_challenge) {
    if (!req.codeVerifier) return 'code_verifier: is required (PKCE)';
    if (!pkceMatches(req.codeVerifier, code.code_challenge)) return 'code_verifier: does not match the code challenge';
  } else if (req.codeVerifier) {
    return 'code_verifier: the authorization request had no code challenge';
  }
  return undefined;
}

/**
 * The OAuth 2.0 authorization server: the authorization endpoint's decisions, the token endpoint
 * (authorization_code with PKCE, refresh_token with rotation, client_credentials), revocation (RFC 7009),
 * introspection (RFC 7662) and client authentication, throttled like logins. Every grant, revocation and
 * consent has its oauth.* event written by the statement (or transaction) that made it.
 */
export class OAuthService {
  constructor(private readonly deps: OAuthDeps) {}

  /** An OAuth event (oauth.*), written with `db`: the actor given, the caller's context. */
  private event(
    db: Db,
    call: CallContext,
    type: string,
    environment: string,
    actor: { id?: string; email?: string; type: string },
    target: { id: string; type: string } | undefined,
    result: 'success' | 'failure',
    metadata: Record<string, unknown>,
  ): Promise<string> {
    return this.deps.outbox.append(db, oauthEvent(call, type, environment, actor, target, result, metadata));
  }

  /** The client `id` names (any environment: the OAuth endpoints learn it from the client). */
  private client(id: string): Promise<OAuthClientRow | undefined> {
    if (!looksLikeClientId(id)) return Promise.resolve(undefined);
    const { db, clients, clientCache } = this.deps;
    const read = () => clients.get(db.pool, null, id);
    return clientCache ? clientCache.get(id, read) : read();
  }

  /**
   * RFC 6749 2.3: confidential clients authenticate with their secret (HTTP Basic or in the body), public
   * clients with their client_id alone; a public client presenting a secret is refused. Failures are counted
   * per client and per ip like failed logins: past 5 per client or 20 per ip in 15 minutes a failure is
   * answered 429 instead of 401. A correct secret is always accepted: secrets are 256 random bits, so the
   * throttle only stops noise, and nobody can lock a client out by sending it wrong secrets.
   */
  async authenticateClient(req: ClientAuthentication, call: CallContext): Promise<OAuthClientRow | Failure> {
    const { db, throttle, config } = this.deps;
    const client = await this.client(req.clientId);
    const refuse = async (description: string): Promise<Failure> => {
      const ip = callerOf(call).context.ip || 'unknown';
      const environment = client?.environment ?? 'live';
      const key = clientThrottleKey(req.clientId);
      await throttle.recordFailure(db.pool, environment, key, ip);
      const wait = throttleWait(await throttle.failures(db.pool, environment, key, ip), true);
      if (wait !== undefined) return failure('temporarily_unavailable', 'Too many failed client authentications; try again later', 429, wait);
      return failure('invalid_client', description, 401);
    };
    if (!req.clientId) return refuse('client_id: is required (client authentication failed)');
    if (!client) return refuse('client_id: unknown client');
    if (client.type === 'public') {
      if (req.clientSecret || req.clientAuthMethod !== 'none') return refuse('a public client authenticates with its client_id alone; it has no secret');
      return client;
    }
    if (!req.clientSecret || req.clientAuthMethod === 'none') return refuse('client authentication is required for a confidential client');
    const presented = hashClientSecret(req.clientSecret, config.SERVER_SECRET);
    if (!client.secret_hash || !sameHash(client.secret_hash, presented)) return refuse('invalid client credentials');
    return client;
  }

  /**
   * The authorization endpoint's decision. Until client and redirect URI are known to belong together, errors
   * are shown on a page (never redirected: no open redirect); after that they go back to the client with
   * state and iss. Then: the login page when nobody (or not recently enough) is logged in, the consent page
   * when the client is not first party and the user has not yet granted every scope asked for, else a
   * single-use code (60 s) bound to client, redirect URI, PKCE challenge, nonce and scopes.
   */
  async authorize(req: AuthorizationRequest, call: CallContext): Promise<Authorization> {
    const { db, sessions, users, consents, codes, config } = this.deps;
    if (req.repeatedParams.includes('client_id')) return errorPage('invalid_request', 'client_id: given more than once');
    if (req.repeatedParams.includes('redirect_uri')) return errorPage('invalid_request', 'redirect_uri: given more than once');
    if (!req.clientId) return errorPage('invalid_request', 'client_id: is required');
    const client = await this.client(req.clientId);
    if (!client) return errorPage('invalid_client', 'client_id: unknown client');
    if (!req.redirectUri) return errorPage('invalid_request', 'redirect_uri: is required');
    if (!client.redirect_uris.includes(req.redirectUri)) {
      return errorPage('invalid_request', 'redirect_uri: not registered for this client (redirect URIs must match exactly)');
    }
    const base: Authorization = { ...blank, clientName: client.name, environment: client.environment, redirectUri: req.redirectUri };
    const back = (params: Record<string, string>): Authorization => ({
      ...base,
      outcome: 'redirect',
      redirectTo: redirectWith(req.redirectUri, { ...params, state: req.state, iss: config.ISSUER }),
    });
    const backWithError = (error: string, description: string) => back({ error, error_description: description });

    const checked = checkAuthorization(req, client);
    if ('error' in checked) return backWithError(checked.error, checked.description);
    const { scopes, prompts, maxAge } = checked;

    // Who is logged in at the authorization server (the login page's session, in the client's environment).
    const session = looksLikeSessionToken(req.sessionToken)
      ? await sessions.findActiveByHash(db.pool, client.environment, hashSessionToken(req.sessionToken, config.SERVER_SECRET))
      : undefined;
    const user = session ? await users.get(db.pool, client.environment, session.user_id) : undefined;
    // OpenID Connect Core 3.1.2.1: max_age counts from the user's latest authentication (a completed MFA counts).
    const tooOld = maxAge !== undefined && session !== undefined && Date.now() - sessionAuthTime(session).getTime() > maxAge * 1000;
    if (!user || !session || (!req.freshLogin && (prompts.has('login') || tooOld))) {
      if (prompts.has('none')) return backWithError('login_required', 'the user is not logged in');
      return { ...base, outcome: 'login' };
    }

    if (req.consent === 'deny') return backWithError('access_denied', 'the user denied the request');
    if (req.consent !== 'allow') {
      const granted = client.first_party ? scopes : await consents.get(db.pool, user.id, client.id);
      if (scopesOutside(scopes, granted).length || prompts.has('consent')) {
        if (prompts.has('none')) return backWithError('consent_required', 'the user has not consented to these scopes');
        return { ...base, outcome: 'consent', scopes, userEmail: user.email };
      }
    }

    const code = generateOpaqueToken(CODE_PREFIX);
    await db.transaction(async (tx) => {
      if (req.consent === 'allow') {
        await consents.grant(tx, client.environment, user.id, client.id, scopes);
        await this.event(tx, call, 'oauth.consent.granted', client.environment, { id: user.id, email: user.email, type: 'user' }, { id: client.id, type: 'oauth_client' }, 'success', {
          clientId: client.id,
          scopes,
        });
      }
      await codes.insert(tx, {
        hash: hashCode(code, config.SERVER_SECRET),
        environment: client.environment,
        clientId: client.id,
        userId: user.id,
        redirectUri: req.redirectUri,
        scopes,
        nonce: req.nonce,
        codeChallenge: req.codeChallenge,
        // How the user authenticated, kept by the grant for its ID and access tokens (amr, acr, auth_time).
        authTime: sessionAuthTime(session),
        sessionId: session.id,
        amr: session.amr,
        acr: session.acr,
        ttlSeconds: CODE_TTL_SECONDS,
      });
    });
    return back({ code });
  }

  /**
   * The token endpoint (RFC 6749 4.1.3, 6 and 4.4). Codes work once, for 60 s, for the client, redirect URI
   * and PKCE verifier they were issued with; a second redemption ends every token issued from the first.
   * Refresh tokens rotate on every use; presenting one that was already used ends the whole grant.
   */
  async token(req: TokenRequest, call: CallContext): Promise<IssuedTokens | Failure> {
    if (req.repeatedParams.length) return failure('invalid_request', `${req.repeatedParams[0]}: given more than once`);
    const client = await this.authenticateClient(req, call);
    if (isFailure(client)) return client;
    switch (req.grantType) {
      case 'authorization_code':
        return this.redeemCode(client, req, call);
      case 'refresh_token':
        return this.refresh(client, req, call);
      case 'client_credentials':
        return this.clientCredentials(client, req, call);
      case '':
        return failure('invalid_request', 'grant_type: is required');
      default:
        return failure('unsupported_grant_type', 'grant_type: authorization_code, refresh_token or client_credentials');
    }
  }

  /**
   * A code is checked first without a lock, then spent and its grant issued by one statement that holds only if
   * the code is still unused and unexpired. Anything else (a used, expired or mismatched code, or one spent
   * meanwhile) is decided under the code's row lock, where a reuse ends the grant the code gave.
   */
  private async redeemCode(client: OAuthClientRow, req: TokenRequest, call: CallContext): Promise<IssuedTokens | Failure> {
    const { db, codes, config } = this.deps;
    if (!req.code) return failure('invalid_request', 'code: is required');
    if (!req.redirectUri) return failure('invalid_request', 'redirect_uri: is required');
    if (!looksLikeOpaqueToken(CODE_PREFIX, req.code)) return invalidGrant('code: unknown, expired or used');
    const hash = hashCode(req.code, config.SERVER_SECRET);
    const seen = await codes.find(db.pool, hash);
    // A code of another client is left alone: it is not this client's to spend.
    if (!seen || seen.client_id !== client.id) return invalidGrant('code: unknown, expired or used');
    if (!seen.used_at && !seen.expired && seen.user && !codeMismatch(seen, req)) {
      const issued = await this.issueForCode(db.pool, hash, client, seen, seen.user, call);
      if (issued) return this.sign(issued);
    }
    const decided = await db.transaction(async (tx): Promise<Decided | Failure> => {
      const code = await codes.lock(tx, hash);
      if (!code || code.client_id !== client.id) return invalidGrant('code: unknown, expired or used');
      if (code.used_at) {
        if (code.grant_id && (await this.deps.grants.revoke(tx, code.grant_id, 'code_reuse'))) {
          await this.event(tx, call, 'oauth.token.revoked', code.environment, { id: code.user_id, type: 'user' }, grantTarget(code.grant_id), 'success', {
            clientId: client.id,
            reason: 'code_reuse',
          });
        }
        return invalidGrant('code: already used; every token issued from it has been revoked');
      }
      // Any attempt spends the code, so a wrong verifier cannot be retried.
      const spend = () => codes.markUsed(tx, hash, null);
      if (code.expired) return spend().then(() => invalidGrant('code: expired (codes work for 60 seconds)'));
      const mismatch = codeMismatch(code, req);
      if (mismatch) return spend().then(() => invalidGrant(mismatch));
      const user = await this.deps.users.get(tx, code.environment, code.user_id);
      if (!user) return spend().then(() => invalidGrant('code: the user no longer exists'));
      return (await this.issueForCode(tx, hash, client, code, user, call)) ?? invalidGrant('code: unknown, expired or used');
    });
    return this.sign(decided);
  }

  /** Spends the code and issues its grant (one statement); undefined when the code was spent meanwhile. */
  private async issueForCode(
    db: Db,
    hash: Buffer,
    client: OAuthClientRow,
    code: Pick<CodeRow, 'environment' | 'user_id' | 'scopes' | 'auth_time' | 'nonce' | 'session_id' | 'amr' | 'acr'>,
    user: UserRow,
    call: CallContext,
  ): Promise<Decided | undefined> {
    const grant = {
      id: newId('grt'),
      environment: code.environment,
      clientId: client.id,
      userId: user.id,
      scopes: code.scopes,
      authTime: code.auth_time,
      sessionId: code.session_id,
      amr: code.amr,
      acr: code.acr,
    };
    const refresh = this.newRefreshToken(code.scopes);
    const event = this.issuedEvent(call, grant, user, 'authorization_code', code.scopes, refresh.token !== '');
    try {
      const row = await this.deps.codes.redeem(db, hash, this.newGrant(grant, refresh.hash, event));
      return row && { grant: row, scopes: code.scopes, user, refreshToken: refresh.token, nonce: code.nonce };
    } catch (err) {
      // The user was deleted meanwhile (the code went with it).
      if (isForeignKeyViolation(err)) return undefined;
      throw err;
    }
  }

  /**
   * The token and its grant are checked first without a lock, then rotated by one statement that holds only
   * if the token is still unused and unexpired and its grant unrevoked. Anything else is decided under the
   * rows' locks, where a reuse ends the whole grant.
   */
  private async refresh(client: OAuthClientRow, req: TokenRequest, call: CallContext): Promise<IssuedTokens | Failure> {
    const { db, refreshTokens, grants, users, config } = this.deps;
    if (!req.refreshToken) return failure('invalid_request', 'refresh_token: is required');
    if (!looksLikeOpaqueToken(REFRESH_TOKEN_PREFIX, req.refreshToken)) return invalidGrant('refresh_token: unknown, expired or revoked');
    const hash = hashRefreshToken(req.refreshToken, config.SERVER_SECRET);
    const seen = await refreshTokens.findForRotation(db.pool, hash);
    if (!seen || seen.grant.client_id !== client.id) return invalidGrant('refresh_token: unknown, expired or revoked');
    const scopes = req.scope ? parseScope(req.scope) : seen.grant.scopes;
    const beyond = scopesOutside(scopes, seen.grant.scopes);
    if (!seen.used_at && !seen.expired && !seen.grant.revoked_at && !beyond.length && scopes.length && seen.user) {
      const rotated = await this.rotate(db.pool, hash, seen.grant, seen.user, scopes, call);
      if (rotated) return this.sign(rotated);
    }
    const decided = await db.transaction(async (tx): Promise<Decided | Failure> => {
      const rt = await refreshTokens.lock(tx, hash);
      if (!rt || rt.grant.client_id !== client.id) return invalidGrant('refresh_token: unknown, expired or revoked');
      const { grant } = rt;
      if (rt.used_at) {
        // Reuse of a rotated token: either the client or a thief holds a stale copy. End the whole family.
        const revoked = await grants.revoke(tx, grant.id, 'refresh_reuse');
        await this.event(tx, call, 'oauth.refresh_reuse_detected', grant.environment, actorOf(grant), grantTarget(grant.id), 'failure', {
          clientId: client.id,
          grantRevoked: revoked,
        });
        return invalidGrant('refresh_token: already used; the whole grant has been revoked');
      }
      if (grant.revoked_at || rt.expired) return invalidGrant('refresh_token: unknown, expired or revoked');
      if (beyond.length) return failure('invalid_scope', `scope: beyond the original grant: ${beyond.join(' ')}`);
      if (!scopes.length) return failure('invalid_scope', 'scope: at least one scope is required');
      const user = grant.user_id ? await users.get(tx, grant.environment, grant.user_id) : undefined;
      if (!user) return invalidGrant('refresh_token: the user no longer exists');
      return (await this.rotate(tx, hash, grant, user, scopes, call)) ?? invalidGrant('refresh_token: unknown, expired or revoked');
    });
    return this.sign(decided);
  }

  /** Spends the refresh token, stores its successor and the event (one statement); undefined when it no longer holds. */
  private async rotate(db: Db, hash: Buffer, grant: GrantRow, user: UserRow, scopes: string[], call: CallContext): Promise<Decided | undefined> {
    const refresh = this.newRefreshToken(grant.scopes);
    const event = this.issuedEvent(call, { id: grant.id, environment: grant.environment, clientId: grant.client_id, userId: grant.user_id }, user, 'refresh_token', scopes, refresh.token !== '');
    const rotated = await this.deps.refreshTokens.rotate(db, hash, grant.id, refresh.hash, this.deps.config.OAUTH_REFRESH_TOKEN_TTL_SECONDS, event);
    return rotated ? { grant, scopes, user, refreshToken: refresh.token } : undefined;
  }

  private async clientCredentials(client: OAuthClientRow, req: TokenRequest, call: CallContext): Promise<IssuedTokens | Failure> {
    if (client.type !== 'confidential') return failure('unauthorized_client', 'client_credentials is for confidential clients');
    const requested = req.scope ? parseScope(req.scope) : apiScopesOf(client.scopes);
    const userScopes = requested.filter((s) => USER_SCOPES.has(s));
    if (userScopes.length) return failure('invalid_scope', `scope: ${userScopes.join(' ')} need a user; client_credentials tokens act as the client`);
    const beyond = scopesOutside(requested, client.scopes);
    if (beyond.length) return failure('invalid_scope', `scope: not allowed for this client: ${beyond.join(' ')}`);
    if (!requested.length) return failure('invalid_scope', 'scope: the client has no API scopes');
    const grant = { id: newId('grt'), environment: client.environment, clientId: client.id, userId: null, scopes: requested, authTime: null, sessionId: null, amr: [], acr: '' };
    const event = this.issuedEvent(call, grant, undefined, 'client_credentials', requested, false);
    let row: GrantRow;
    try {
      row = await this.deps.grants.issueBatched(this.deps.db.pool, this.newGrant(grant, null, event));
    } catch (err) {
      // Deleted since it authenticated.
      if (isForeignKeyViolation(err)) return failure('invalid_client', 'client_id: unknown client', 401);
      throw err;
    }
    return this.sign({ grant: row, scopes: requested, user: undefined, refreshToken: '' });
  }

  /** The oauth.token.issued event of a grant (the user's email as the actor's, when a user acts). */
  private issuedEvent(
    call: CallContext,
    grant: { id: string; environment: string; clientId: string; userId: string | null },
    user: UserRow | undefined,
    grantType: string,
    scopes: string[],
    refreshToken: boolean,
  ): EventInput {
    const actor = user ? { id: user.id, type: 'user', email: user.email } : actorOf({ user_id: grant.userId, client_id: grant.clientId });
    return oauthEvent(call, 'oauth.token.issued', grant.environment, actor, grantTarget(grant.id), 'success', {
      clientId: grant.clientId,
      grantType,
      scopes,
      refreshToken,
      idToken: grant.userId !== null && scopes.includes('openid'),
    });
  }

  /** A new refresh token (and its hash) when `scopes` hold offline_access, else none. */
  private newRefreshToken(scopes: string[]): { token: string; hash: Buffer | null } {
    if (!scopes.includes('offline_access')) return { token: '', hash: null };
    const token = generateOpaqueToken(REFRESH_TOKEN_PREFIX);
    return { token, hash: hashRefreshToken(token, this.deps.config.SERVER_SECRET) };
  }

  private newGrant(grant: NewGrant['grant'], refreshTokenHash: Buffer | null, event: EventInput): NewGrant {
    return { grant, refreshTokenHash, refreshTokenTtlSeconds: this.deps.config.OAUTH_REFRESH_TOKEN_TTL_SECONDS, event };
  }

  private sign(d: Decided | Failure): Promise<IssuedTokens | Failure> | Failure {
    return isFailure(d) ? d : this.signTokens(d.grant, d.scopes, d.user, d.refreshToken, d.nonce);
  }

  /**
   * Signs the tokens of one grant (after its transaction committed, so no row stays locked meanwhile): an
   * access token (JWT, aud = the API, `scope`, `client_id`, sid = the grant) and an ID token when `scopes`
   * hold openid. Both tell how the user authenticated for the grant (amr, acr, auth_time; refreshed tokens the
   * same: a refresh is no authentication); client_credentials tokens have no user and none of them.
   */
  private async signTokens(grant: GrantRow, scopes: string[], user: UserRow | undefined, refreshToken: string, nonce?: string | null): Promise<IssuedTokens> {
    const { keys, config } = this.deps;
    const now = Math.floor(Date.now() / 1000);
    const exp = now + config.ACCESS_TOKEN_TTL_SECONDS;
    const scope = scopes.join(' ');
    const subject = grant.user_id ?? grant.client_id;
    const authentication = grant.user_id ? authenticationClaims({ amr: grant.amr, acr: grant.acr, authTime: grant.auth_time }) : {};
    // The email only when the client was granted it (scope email): it names the actor of audit entries.
    const claims = {
      sid: grant.id,
      env: grant.environment,
      scope,
      client_id: grant.client_id,
      ...(user ? { roles: user.roles } : {}),
      ...(user && scopes.includes('email') ? { email: user.email } : {}),
      ...authentication,
    };
    const std = { issuer: config.ISSUER, subject, issuedAt: now, expiresAt: exp };
    const accessToken = await signJwt(keys, 'at+jwt', claims, { ...std, audience: config.JWT_AUDIENCE });
    let idToken = '';
    if (user && scopes.includes('openid')) {
      const idClaims: Record<string, unknown> = { azp: grant.client_id, at_hash: atHash(accessToken), ...authentication };
      if (nonce) idClaims.nonce = nonce;
      Object.assign(idClaims, userClaims(user, scopes));
      idToken = await signJwt(keys, 'JWT', idClaims, { ...std, audience: grant.client_id });
    }
    return { accessToken, tokenType: 'Bearer', expiresIn: exp - now, scope, refreshToken, idToken };
  }

  /** The claims of one of our access tokens (signature, iss, aud and exp checked), or undefined. */
  private async verifyAccessToken(token: string): Promise<AccessClaims | undefined> {
    if (!JWT_SHAPE.test(token) || token.length > 4096) return undefined;
    const { keys, config } = this.deps;
    try {
      const { payload } = await jwtVerify(token, createLocalJWKSet((await keys.get()).jwks as JSONWebKeySet), {
        issuer: config.ISSUER,
        audience: config.JWT_AUDIENCE,
        algorithms: ['ES256'],
        typ: 'at+jwt',
      });
      if (typeof payload.sub !== 'string' || typeof payload.sid !== 'string' || typeof payload.env !== 'string') return undefined;
      return payload as AccessClaims;
    } catch {
      return undefined;
    }
  }

  /** Ends the grant (idempotent) and records oauth.token.revoked when it was active. */
  private revokeGrant(call: CallContext, grant: Pick<GrantRow, 'id' | 'environment' | 'client_id' | 'user_id'>, reason: string): Promise<boolean> {
    return this.deps.db.transaction(async (tx) => {
      const revoked = await this.deps.grants.revoke(tx, grant.id, reason);
      if (revoked) await this.event(tx, call, 'oauth.token.revoked', grant.environment, actorOf(grant), grantTarget(grant.id), 'success', { clientId: grant.client_id, reason });
      return revoked;
    });
  }

  /**
   * RFC 7009. Revoking a refresh token or an access token ends its whole grant: the refresh token family and
   * every access token of it (gateways learn it on the credential change stream). A token that is unknown,
   * already revoked, or issued to another client is answered the same, so the endpoint tells nothing.
   * Undefined: revoked (or nothing to revoke).
   */
  async revoke(req: ClientAuthentication & { token: string }, call: CallContext): Promise<Failure | undefined> {
    const { db, refreshTokens, grants, config } = this.deps;
    const client = await this.authenticateClient(req, call);
    if (isFailure(client)) return client;
    if (!req.token) return failure('invalid_request', 'token: is required');
    if (looksLikeOpaqueToken(REFRESH_TOKEN_PREFIX, req.token)) {
      const rt = await refreshTokens.find(db.pool, hashRefreshToken(req.token, config.SERVER_SECRET));
      if (rt && rt.client_id === client.id) {
        await this.revokeGrant(call, { id: rt.grant_id, environment: rt.environment, client_id: rt.client_id, user_id: rt.user_id }, 'revoked_by_client');
      }
      return undefined;
    }
    const claims = await this.verifyAccessToken(req.token);
    if (claims?.client_id === client.id && claims.sid.startsWith('grt_')) {
      const grant = await grants.get(db.pool, claims.sid);
      if (grant) await this.revokeGrant(call, grant, 'revoked_by_client');
    }
    return undefined;
  }

  /**
   * RFC 7662 token introspection for any credential, so resource servers have one way to check them: access
   * tokens (ours, also session JWTs), refresh tokens (only their own client's), session tokens and API keys.
   * Only credentials of the client's own environment can be active; anything else is {"active": false}. A
   * user's credentials tell how the user authenticated (amr, acr, auth_time), as their tokens do.
   */
  async introspect(req: ClientAuthentication & { token: string }, call: CallContext): Promise<Failure | Record<string, unknown>> {
    const client = await this.authenticateClient(req, call);
    if (isFailure(client)) return client;
    return req.token ? this.inspect(client, req.token) : INACTIVE;
  }

  private async inspect(client: OAuthClientRow, token: string): Promise<Record<string, unknown>> {
    const { db, grants, sessions, refreshTokens, apiKeys, config } = this.deps;
    const env = client.environment;
    const claims = await this.verifyAccessToken(token);
    if (claims) {
      if (claims.env !== env) return INACTIVE;
      const grant = claims.sid.startsWith('grt_') ? await grants.get(db.pool, claims.sid) : undefined;
      const live = grant ? !grant.revoked_at : (await sessions.findActiveById(db.pool, claims.sid)) !== undefined;
      if (!live) return INACTIVE;
      return activeAccessToken(claims);
    }
    if (looksLikeOpaqueToken(REFRESH_TOKEN_PREFIX, token)) {
      const rt = await refreshTokens.find(db.pool, hashRefreshToken(token, config.SERVER_SECRET));
      if (!rt || rt.client_id !== client.id || rt.used_at || rt.expired || rt.revoked_at) return INACTIVE;
      return {
        active: true,
        token_type: 'refresh_token',
        scope: rt.scopes.join(' '),
        client_id: rt.client_id,
        sub: rt.user_id,
        exp: seconds(rt.expires_at),
        iat: seconds(rt.created_at),
        ...authenticationClaims({ amr: rt.amr, acr: rt.acr, authTime: rt.auth_time }),
      };
    }
    if (looksLikeSessionToken(token)) {
      const s = await sessions.findActiveByHash(db.pool, env, hashSessionToken(token, config.SERVER_SECRET));
      if (!s) return INACTIVE;
      return { active: true, token_type: 'session', sub: s.user_id, sid: s.id, exp: seconds(s.expires_at), iat: seconds(s.created_at), ...authenticationClaims(authenticationOfSession(s)) };
    }
    if (looksLikeKey(token)) {
      const hash = hashKey(token, config.SERVER_SECRET);
      const k = await apiKeys.findByHash(db.pool, hash);
      if (!k || k.environment !== env || k.revoked_at || (k.expires_at && k.expires_at.getTime() <= Date.now())) return INACTIVE;
      if (!hashesEqual(k.key_hash, hash) && !(k.previous_key_hash && hashesEqual(k.previous_key_hash, hash))) return INACTIVE;
      return { active: true, token_type: 'api_key', sub: k.id, key_type: k.type, iat: seconds(k.created_at), ...(k.expires_at ? { exp: seconds(k.expires_at) } : {}) };
    }
    return INACTIVE;
  }
}
