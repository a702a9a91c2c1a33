import type { identity } from '@secsvc/proto';
import { environmentOf } from '@secsvc/shared';
import type { MfaService } from '../services/mfa';
import { toPasskeyChallenge } from './messages';

export const startPasskeyRegistration =
  (mfa: MfaService) =>
  async (req: identity.StartPasskeyRegistrationRequest): Promise<identity.PasskeyChallenge> =>
    toPasskeyChallenge(await mfa.startPasskeyRegistration(environmentOf(req.environment), req.userId));
