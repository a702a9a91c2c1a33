import type { audit, identity, policy } from '@secsvc/proto';
import type { PromiseClient } from '@secsvc/shared';
import type { UserCache } from './auth/user-cache';
import type { VerifyCache } from './auth/verify-cache';
import type { SpSettings } from './sso/sp';

export interface ServiceClients {
  identity: PromiseClient<identity.IdentityServiceClient>;
  policy: PromiseClient<policy.PolicyServiceClient>;
  audit: PromiseClient<audit.AuditServiceClient>;
}

/** Who is calling, as resolved by the auth middleware: an API key, or a user through a session token. */
export interface Principal {
  type: 'api_key' | 'user' | 'anonymous';
  /** The API key id, or the user id. */
  id: string;
  /** Users: their email, when the credential says it (sessions always; JWTs when they carry it). */
  email?: string;
  /** API keys: the key's name. */
  name?: string;
  /** The credential a change of which ends this authentication: the key id or the session id. */
  credentialId: string;
  /** secret | public | test for API keys; session or jwt for users; none for anonymous callers. */
  keyType: 'secret' | 'public' | 'test' | 'session' | 'jwt' | 'none';
  environment: 'live' | 'test';
  plan: string;
  /** Requests per minute of an enterprise key with a custom limit. */
  rateLimit?: number;
  roles?: string[];
  /** OAuth access tokens: the scopes granted (a route needs its scope too); absent for other credentials. */
  scopes?: string[];
  /** OAuth access tokens: the client they were issued to. */
  clientId?: string;
  /** Users: how they authenticated (RFC 8176 amr of the session or token), when known. */
  amr?: string[];
  /** Users: epoch seconds of the credential's latest completed MFA; undefined when none. */
  mfaAt?: number;
}

/** A caller without credentials, on the few routes that allow it (login pages); always the live environment. */
export const ANONYMOUS: Principal = { type: 'anonymous', id: '', credentialId: '', keyType: 'none', environment: 'live', plan: 'free' };

/** What a route handler gets besides its validated input. */
export interface RouteContext {
  requestId: string;
  principal: Principal;
  clients: ServiceClients;
  /** Cache of session verifications (absent: every verify asks identity). */
  verifyCache?: VerifyCache;
  /** Drops this gateway's cached authentications of a session whose MFA just changed (absent: no cache). */
  authenticationChanged?: (sessionId: string) => void;
  /** Cache of users' roles for the simulator (absent: every simulate asks identity). */
  userCache?: UserCache;
  /** DOWNLOAD_BASE_URL: where export download links point. */
  downloadBaseUrl?: string;
  /** SAML service provider: the public origin of its endpoints (ISSUER) and its key pair (absent: no SSO). */
  sso?: SpSettings;
  /** Options for every gRPC call of this request: request id, deadline, and who/where for audit events. */
  call: { requestId: string; deadlineMs: number; headers: Record<string, string> };
}
