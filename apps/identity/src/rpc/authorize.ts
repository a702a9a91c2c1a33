import type { identity } from '@secsvc/proto';
import type { CallContext } from '@secsvc/shared';
import type { OAuthService } from '../services/oauth';

/** The authorization endpoint's decision: an error page, a redirect (code or error), the login or the consent page. */
export const authorize =
  (oauth: OAuthService) =>
  (req: identity.AuthorizeRequest, call: CallContext): Promise<identity.AuthorizeResponse> =>
    oauth.authorize(req, call);
