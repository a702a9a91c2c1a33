import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { OAuthClientsService } from '../services/oauth-clients';
import { toClientMessage } from './messages';

export const createOAuthClient =
  (clients: OAuthClientsService) =>
  async (req: identity.CreateOAuthClientRequest, call: CallContext): Promise<identity.CreatedOAuthClient> => {
    const { row, secret } = await clients.create(environmentOf(req.environment), req, call);
    return { client: toClientMessage(row), clientSecret: secret };
  };
