import type { identity } from '@secsvc/proto';
import type { CallContext } from '@secsvc/shared';
import { isFailure } from '../domain/oauth';
import type { OAuthService } from '../services/oauth';
import { oauthOk } from './messages';

/** RFC 7662: the answer as JSON ({"active": false} for anything not active), unless the client could not be authenticated. */
export const introspectToken =
  (oauth: OAuthService) =>
  async (req: identity.IntrospectTokenRequest, call: CallContext): Promise<identity.IntrospectTokenResponse> => {
    const r = await oauth.introspect(req, call);
    return isFailure(r) ? { ...r, resultJson: '' } : { ...oauthOk, resultJson: JSON.stringify(r) };
  };
