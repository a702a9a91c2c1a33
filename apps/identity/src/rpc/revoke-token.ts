import type { identity } from '@secsvc/proto';
import type { CallContext } from '@secsvc/shared';
import type { OAuthService } from '../services/oauth';
import { oauthOk } from './messages';

/** RFC 7009: 200 whatever the token was, unless the client could not be authenticated or gave no token. */
export const revokeToken =
  (oauth: OAuthService) =>
  async (req: identity.RevokeTokenRequest, call: CallContext): Promise<identity.RevokeTokenResponse> =>
    (await oauth.revoke(req, call)) ?? oauthOk;
