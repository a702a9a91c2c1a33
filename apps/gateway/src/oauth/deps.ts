import type { Request } from 'express';
import type { Logger } from '@secsvc/shared';
import type { AuthCache } from '../auth/auth-cache';
import type { JwtVerifier } from '../auth/jwt-verifier';
import type { ServiceClients } from '../context';
import { originHeaders } from '../http/origin';

/** What the OAuth endpoints need from the gateway. */
export interface OAuthDeps {
  clients: ServiceClients;
  /** The public origin (ISSUER): iss of every token, base of the discovery document. */
  issuer: string;
  deadlineMs: number;
  logger: Logger;
  /** With both, introspection of access tokens is answered at the gateway (see introspect.ts). */
  jwt?: JwtVerifier;
  authCache?: AuthCache;
  /** SAML single sign-on is served: the login page offers "Sign in with SSO". */
  sso?: boolean;
}

/** gRPC call options: request id, deadline, and where the request came from (for events and throttling). */
export function callOptions(deps: OAuthDeps, req: Request) {
  return {
    requestId: req.requestId,
    deadlineMs: deps.deadlineMs,
    headers: { ...originHeaders(req), 'x-auth-method': 'oauth' },
  };
}
