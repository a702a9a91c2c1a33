import type { identity } from '@secsvc/proto';
import { environmentOf } from '@secsvc/shared';
import type { SsoConnectionsService } from '../services/sso-connections';
import { toConnectionMessage } from './messages';

export const listSsoConnections =
  (connections: SsoConnectionsService) =>
  async (req: identity.ListSsoConnectionsRequest): Promise<identity.ListSsoConnectionsResponse> => {
    const { page, hasMore, nextCursor } = await connections.list(environmentOf(req.environment), req);
    return { connections: page.map(toConnectionMessage), hasMore, nextCursor };
  };
