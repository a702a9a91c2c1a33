import type { identity } from '@secsvc/proto';
import type { CallContext } from '@secsvc/shared';
import { isFailure } from '../domain/oauth';
import type { OAuthService } from '../services/oauth';
import { oauthOk } from './messages';

/** Client authentication alone: the gateway answers introspection of access tokens itself and caches this. */
export const authenticateOAuthClient =
  (oauth: OAuthService) =>
  async (req: identity.AuthenticateOAuthClientRequest, call: CallContext): Promise<identity.AuthenticateOAuthClientResponse> => {
    const client = await oauth.authenticateClient(req, call);
    if (isFailure(client)) return { ...client, clientId: '', environment: '', type: '' };
    return { ...oauthOk, clientId: client.id, environment: client.environment, type: client.type };
  };
