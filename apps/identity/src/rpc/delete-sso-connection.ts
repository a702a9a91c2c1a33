import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { SsoConnectionsService } from '../services/sso-connections';

export const deleteSsoConnection =
  (connections: SsoConnectionsService) =>
  async (req: identity.DeleteSsoConnectionRequest, call: CallContext): Promise<identity.DeleteSsoConnectionResponse> => {
    await connections.delete(environmentOf(req.environment), req.id, call);
    return {};
  };
