import type { identity } from '@secsvc/proto';
import type { AccessTokensService } from '../services/access-tokens';

export const getJwks = (accessTokens: AccessTokensService) => async (): Promise<identity.Jwks> => ({ jwksJson: await accessTokens.jwksJson() });
