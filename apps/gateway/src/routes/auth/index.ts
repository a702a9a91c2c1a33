import { loginRoute } from './login';
import { loginMfaEnrollTotpRoute, loginMfaRoute, passkeyLoginOptionsRoute, passkeyLoginRoute, stepUpOptionsRoute, stepUpRoute } from './mfa';
import { confirmPasswordResetRoute, requestPasswordResetRoute } from './password-reset';
import { issueTokenRoute } from './tokens';

export const authRoutes = [
  loginRoute,
  loginMfaRoute,
  loginMfaEnrollTotpRoute,
  passkeyLoginOptionsRoute,
  passkeyLoginRoute,
  stepUpOptionsRoute,
  stepUpRoute,
  requestPasswordResetRoute,
  confirmPasswordResetRoute,
  issueTokenRoute,
];
