import type { Request, Response } from 'express';
import { ACR_MFA, ACR_SINGLE_FACTOR, OAUTH_SCOPES } from '@secsvc/shared';

/** OpenID Connect Discovery 1.0 and RFC 8414 metadata (the same document at both well-known paths). */
export function discoveryDocument(issuer: string) {
  const base = issuer.replace(/\/$/, '');
  const authMethods = ['client_secret_basic', 'client_secret_post', 'none'];
  return {
    issuer,
    authorization_endpoint: `${base}/oauth/authorize`,
    token_endpoint: `${base}/oauth/token`,
    userinfo_endpoint: `${base}/oauth/userinfo`,
    jwks_uri: `${base}/.well-known/jwks.json`,
    revocation_endpoint: `${base}/oauth/revoke`,
    introspection_endpoint: `${base}/oauth/introspect`,
    end_session_endpoint: `${base}/oauth/logout`,
    scopes_supported: OAUTH_SCOPES,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token', 'client_credentials'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['ES256'],
    token_endpoint_auth_methods_supported: authMethods,
    revocation_endpoint_auth_methods_supported: authMethods,
    introspection_endpoint_auth_methods_supported: authMethods,
    code_challenge_methods_supported: ['S256'],
    claims_supported: ['sub', 'iss', 'aud', 'exp', 'iat', 'auth_time', 'amr', 'acr', 'nonce', 'at_hash', 'azp', 'name', 'updated_at', 'email', 'email_verified'],
    // One factor, or more than one (MFA): the acr of tokens; acr_values=urn:secsvc:acr:mfa asks for a step-up.
    acr_values_supported: [ACR_SINGLE_FACTOR, ACR_MFA],
    prompt_values_supported: ['none', 'login', 'consent'],
    authorization_response_iss_parameter_supported: true,
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
    claims_parameter_supported: false,
  };
}

export function discovery(issuer: string) {
  const doc = discoveryDocument(issuer);
  return (_req: Request, res: Response): void => {
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.json(doc);
  };
}
