import type { identity } from '@secsvc/proto';
import { environmentOf } from '@secsvc/shared';
import type { SsoConnectionsService } from '../services/sso-connections';
import { toConnectionMessage } from './messages';

export const getSsoConnection =
  (connections: SsoConnectionsService) =>
  async (req: identity.GetSsoConnectionRequest): Promise<identity.SsoConnection> =>
    toConnectionMessage(await connections.get(req.anyEnvironment ? null : environmentOf(req.environment), req.id));
