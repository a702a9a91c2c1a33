import type { identity } from '@secsvc/proto';
import { environmentOf } from '@secsvc/shared';
import type { SsoConnectionsService } from '../services/sso-connections';
import { toConnectionMessage } from './messages';

export const findSsoConnection =
  (connections: SsoConnectionsService) =>
  async (req: identity.FindSsoConnectionRequest): Promise<identity.SsoConnection> =>
    toConnectionMessage(await connections.findByDomain(environmentOf(req.environment), req.domain));
