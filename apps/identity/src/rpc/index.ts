import type { IdentityContext } from '../context';
import { identityServices, type IdentityDeps } from '../services';
import { authenticateApiKey } from './authenticate-api-key';
import { authenticateOAuthClient } from './authenticate-oauth-client';
import { authenticateSession } from './authenticate-session';
import { authorize } from './authorize';
import { completeSamlLogin } from './complete-saml-login';
import { confirmPasswordReset } from './confirm-password-reset';
import { createApiKey } from './create-api-key';
import { createOAuthClient } from './create-oauth-client';
import { createSession } from './create-session';
import { createSsoConnection } from './create-sso-connection';
import { createUser } from './create-user';
import { deleteOAuthClient } from './delete-oauth-client';
import { getConsoleClients } from './get-console-clients';
import { deleteSsoConnection } from './delete-sso-connection';
import { deleteUser } from './delete-user';
import { endSamlSessions } from './end-saml-sessions';
import { findSsoConnection } from './find-sso-connection';
import { getApiKey } from './get-api-key';
import { getJwks } from './get-jwks';
import { getOAuthClient } from './get-oauth-client';
import { getSsoConnection } from './get-sso-connection';
import { getUser } from './get-user';
import { introspectToken } from './introspect-token';
import { issueAccessToken } from './issue-access-token';
import { listApiKeys } from './list-api-keys';
import { listOAuthClients } from './list-oauth-clients';
import { listSsoConnections } from './list-sso-connections';
import { listUserSessions } from './list-user-sessions';
import { login } from './login';
import { listUsers } from './list-users';
import { requestPasswordReset } from './request-password-reset';
import { reportAuthFailure } from './report-auth-failure';
import { reportRateLimitExceeded } from './report-rate-limit-exceeded';
import { reportSamlLoginFailure } from './report-saml-login-failure';
import { revokeApiKey } from './revoke-api-key';
import { revokeSession } from './revoke-session';
import { revokeToken } from './revoke-token';
import { revokeUserSessions } from './revoke-user-sessions';
import { rotateApiKey } from './rotate-api-key';
import { saveSamlRequest } from './save-saml-request';
import { setPassword } from './set-password';
import { takeSamlRequest } from './take-saml-request';
import { token } from './token';
import { updateOAuthClient } from './update-oauth-client';
import { updateSsoConnection } from './update-sso-connection';
import { updateUser } from './update-user';
import { verifySession } from './verify-session';
import { watchCredentialChanges } from './watch-credential-changes';
import { completeMfaLogin } from './complete-mfa-login';
import { completePasskeyLogin } from './complete-passkey-login';
import { confirmTotp } from './confirm-totp';
import { deleteMfaFactor } from './delete-mfa-factor';
import { enrollTotp } from './enroll-totp';
import { enrollTotpForLogin } from './enroll-totp-for-login';
import { finishPasskeyRegistration } from './finish-passkey-registration';
import { getMfaSettings } from './get-mfa-settings';
import { listMfaFactors } from './list-mfa-factors';
import { regenerateRecoveryCodes } from './regenerate-recovery-codes';
import { startPasskeyAuthentication } from './start-passkey-authentication';
import { startPasskeyRegistration } from './start-passkey-registration';
import { stepUpSession } from './step-up-session';
import { updateMfaFactor } from './update-mfa-factor';
import { updateMfaSettings } from './update-mfa-settings';

export type { IdentityDeps } from '../services';

/** Every IdentityService RPC over one context (the server's implementation, and the tests'). */
export function identityService(ctx: IdentityContext, deps: IdentityDeps) {
  const s = identityServices(ctx, deps);
  return {
    createUser: createUser(s.users),
    getUser: getUser(s.users),
    updateUser: updateUser(s.users),
    deleteUser: deleteUser(s.users),
    listUsers: listUsers(s.users),
    authenticateApiKey: authenticateApiKey(s.apiKeys),
    watchCredentialChanges: watchCredentialChanges(s.credentialChanges),
    createApiKey: createApiKey(s.apiKeys),
    listApiKeys: listApiKeys(s.apiKeys),
    getApiKey: getApiKey(s.apiKeys),
    revokeApiKey: revokeApiKey(s.apiKeys),
    rotateApiKey: rotateApiKey(s.apiKeys),
    authenticateSession: authenticateSession(s.sessions),
    issueAccessToken: issueAccessToken(s.accessTokens),
    getJwks: getJwks(s.accessTokens),
    reportAuthFailure: reportAuthFailure(s.authEvents),
    reportRateLimitExceeded: reportRateLimitExceeded(s.authEvents),
    setPassword: setPassword(s.passwords),
    login: login(s.passwords),
    listMfaFactors: listMfaFactors(s.mfa),
    enrollTotp: enrollTotp(s.mfa),
    confirmTotp: confirmTotp(s.mfa),
    startPasskeyRegistration: startPasskeyRegistration(s.mfa),
    finishPasskeyRegistration: finishPasskeyRegistration(s.mfa),
    regenerateRecoveryCodes: regenerateRecoveryCodes(s.mfa),
    updateMfaFactor: updateMfaFactor(s.mfa),
    deleteMfaFactor: deleteMfaFactor(s.mfa),
    completeMfaLogin: completeMfaLogin(s.mfa),
    enrollTotpForLogin: enrollTotpForLogin(s.mfa),
    startPasskeyAuthentication: startPasskeyAuthentication(s.mfa),
    completePasskeyLogin: completePasskeyLogin(s.mfa),
    stepUpSession: stepUpSession(s.mfa),
    getMfaSettings: getMfaSettings(s.mfa),
    updateMfaSettings: updateMfaSettings(s.mfa),
    requestPasswordReset: requestPasswordReset(s.passwords),
    confirmPasswordReset: confirmPasswordReset(s.passwords),
    createSession: createSession(s.sessions),
    verifySession: verifySession(s.sessions),
    revokeSession: revokeSession(s.sessions),
    listUserSessions: listUserSessions(s.sessions),
    revokeUserSessions: revokeUserSessions(s.sessions),
    createOAuthClient: createOAuthClient(s.oauthClients),
    listOAuthClients: listOAuthClients(s.oauthClients),
    getOAuthClient: getOAuthClient(s.oauthClients),
    updateOAuthClient: updateOAuthClient(s.oauthClients),
    deleteOAuthClient: deleteOAuthClient(s.oauthClients),
    getConsoleClients: getConsoleClients(s.consoleClients),
    authorize: authorize(s.oauth),
    token: token(s.oauth),
    revokeToken: revokeToken(s.oauth),
    introspectToken: introspectToken(s.oauth),
    authenticateOAuthClient: authenticateOAuthClient(s.oauth),
    createSsoConnection: createSsoConnection(s.ssoConnections),
    listSsoConnections: listSsoConnections(s.ssoConnections),
    getSsoConnection: getSsoConnection(s.ssoConnections),
    updateSsoConnection: updateSsoConnection(s.ssoConnections),
    deleteSsoConnection: deleteSsoConnection(s.ssoConnections),
    findSsoConnection: findSsoConnection(s.ssoConnections),
    saveSamlRequest: saveSamlRequest(s.samlLogins),
    takeSamlRequest: takeSamlRequest(s.samlLogins),
    endSamlSessions: endSamlSessions(s.samlLogins),
    completeSamlLogin: completeSamlLogin(s.samlLogins),
    reportSamlLoginFailure: reportSamlLoginFailure(s.samlLogins),
  };
}

export type IdentityRpc = ReturnType<typeof identityService>;
