import type { identity } from '@secsvc/proto';
import type { AccessTokensService } from '../services/access-tokens';

/** A short-lived JWT for an active session (never outliving it). */
export const issueAccessToken =
  (accessTokens: AccessTokensService) =>
  (req: identity.IssueAccessTokenRequest): Promise<identity.AccessToken> =>
    accessTokens.issue(req.sessionToken);
