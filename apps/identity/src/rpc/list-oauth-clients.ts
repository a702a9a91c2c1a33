import type { identity } from '@secsvc/proto';
import { environmentOf } from '@secsvc/shared';
import type { OAuthClientsService } from '../services/oauth-clients';
import { toClientMessage } from './messages';

export const listOAuthClients =
  (clients: OAuthClientsService) =>
  async (req: identity.ListOAuthClientsRequest): Promise<identity.ListOAuthClientsResponse> => {
    const { page, hasMore, nextCursor } = await clients.list(environmentOf(req.environment), req);
    return { clients: page.map(toClientMessage), hasMore, nextCursor };
  };
