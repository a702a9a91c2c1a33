import { createSessionRoute } from './create-session';
import { revokeSessionRoute } from './revoke-session';
import { listUserSessionsRoute, revokeUserSessionRoute, revokeUserSessionsRoute } from './user-sessions';
import { verifySessionRoute } from './verify-session';

export const sessionRoutes = [createSessionRoute, verifySessionRoute, revokeSessionRoute, listUserSessionsRoute, revokeUserSessionsRoute, revokeUserSessionRoute];
