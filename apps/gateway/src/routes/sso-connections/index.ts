import { createConnectionRoute } from './create-connection';
import { deleteConnectionRoute } from './delete-connection';
import { getConnectionRoute } from './get-connection';
import { listConnectionsRoute } from './list-connections';
import { singleLogoutRoute } from './single-logout';
import { updateConnectionRoute } from './update-connection';

export const ssoConnectionRoutes = [listConnectionsRoute, createConnectionRoute, getConnectionRoute, updateConnectionRoute, deleteConnectionRoute, singleLogoutRoute];
