import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { SsoConnectionsService } from '../services/sso-connections';
import { toConnectionMessage } from './messages';

export const createSsoConnection =
  (connections: SsoConnectionsService) =>
  async (req: identity.CreateSsoConnectionRequest, call: CallContext): Promise<identity.SsoConnection> =>
    toConnectionMessage(await connections.create(environmentOf(req.environment), req.fields, call));
