import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { OAuthClientsService } from '../services/oauth-clients';
import { toClientMessage } from './messages';

export const updateOAuthClient =
  (clients: OAuthClientsService) =>
  async (req: identity.UpdateOAuthClientRequest, call: CallContext): Promise<identity.OAuthClient> => {
    const changes = { name: req.name, redirectUris: req.redirectUris?.values, scopes: req.scopes?.values, firstParty: req.firstParty };
    return toClientMessage(await clients.update(environmentOf(req.environment), req.id, changes, call));
  };
