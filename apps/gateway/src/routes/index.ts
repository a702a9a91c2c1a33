import { apiKeyRoutes } from './api-keys';
import { authRoutes } from './auth';
import { logRoutes } from './logs';
import { mfaRoutes } from './mfa';
import { oauthClientRoutes } from './oauth-clients';
import { policyRoutes } from './policies';
import type { Route } from './route';
import { sessionRoutes } from './sessions';
import { ssoConnectionRoutes } from './sso-connections';
import { userRoutes } from './users';

/** Every /v1 JSON route; the OpenAPI document, scopes and method checks derive from this list. */
export const routes: Route[] = [
  ...userRoutes,
  ...apiKeyRoutes,
  ...sessionRoutes,
  ...mfaRoutes,
  ...authRoutes,
  ...policyRoutes,
  ...logRoutes,
  ...oauthClientRoutes,
  ...ssoConnectionRoutes,
];
