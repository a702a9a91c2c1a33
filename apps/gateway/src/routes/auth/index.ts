import { loginRoute } from './login';
import { confirmPasswordResetRoute, requestPasswordResetRoute } from './password-reset';

export const authRoutes = [loginRoute, requestPasswordResetRoute, confirmPasswordResetRoute];
