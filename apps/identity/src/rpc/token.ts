import type { identity } from '@secsvc/proto';
import type { CallContext } from '@secsvc/shared';
import { isFailure } from '../domain/oauth';
import type { OAuthService } from '../services/oauth';
import { oauthOk } from './messages';

/** The token endpoint: tokens, or an RFC 6749 error with its HTTP status. */
export const token =
  (oauth: OAuthService) =>
  async (req: identity.TokenRequest, call: CallContext): Promise<identity.TokenResponse> => {
    const r = await oauth.token(req, call);
    if (isFailure(r)) {
      const { error, errorDescription, status, retryAfterSeconds } = r;
      return { error, errorDescription, status, retryAfterSeconds, accessToken: '', tokenType: '', expiresIn: 0, refreshToken: '', idToken: '', scope: '' };
    }
    return { ...oauthOk, ...r };
  };
