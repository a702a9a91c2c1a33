import { loginRoute } from './login';
import { confirmPasswordResetRoute, requestPasswordResetRoute } from './password-reset';
import { issueTokenRoute } from './tokens';

export const authRoutes = [loginRoute, requestPasswordResetRoute, confirmPasswordResetRoute, issueTokenRoute];
