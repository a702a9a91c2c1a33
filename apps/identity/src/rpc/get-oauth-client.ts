import type { identity } from '@secsvc/proto';
import { environmentOf } from '@secsvc/shared';
import type { OAuthClientsService } from '../services/oauth-clients';
import { toClientMessage } from './messages';

export const getOAuthClient =
  (clients: OAuthClientsService) =>
  async (req: identity.GetOAuthClientRequest): Promise<identity.OAuthClient> =>
    toClientMessage(await clients.get(environmentOf(req.environment), req.id));
