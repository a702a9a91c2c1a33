import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { OAuthClientsService } from '../services/oauth-clients';

export const deleteOAuthClient =
  (clients: OAuthClientsService) =>
  async (req: identity.DeleteOAuthClientRequest, call: CallContext): Promise<identity.DeleteOAuthClientResponse> => ({
    grantsRevoked: await clients.delete(environmentOf(req.environment), req.id, call),
  });
