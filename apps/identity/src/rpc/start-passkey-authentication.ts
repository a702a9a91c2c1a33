import type { identity } from '@secsvc/proto';
import { environmentOf } from '@secsvc/shared';
import type { MfaService } from '../services/mfa';
import { toPasskeyChallenge } from './messages';

export const startPasskeyAuthentication =
  (mfa: MfaService) =>
  async (req: identity.StartPasskeyAuthenticationRequest): Promise<identity.PasskeyChallenge> =>
    toPasskeyChallenge(await mfa.startPasskeyAuthentication(environmentOf(req.environment), req.userId));
