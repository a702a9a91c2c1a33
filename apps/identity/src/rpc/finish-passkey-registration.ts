import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { MfaService } from '../services/mfa';
import { toFactorMessage } from './messages';

export const finishPasskeyRegistration =
  (mfa: MfaService) =>
  async (req: identity.FinishPasskeyRegistrationRequest, call: CallContext): Promise<identity.MfaFactor> =>
    toFactorMessage(await mfa.finishPasskeyRegistration(environmentOf(req.environment), req.userId, req.challengeId, req.name, req.credentialJson, call));
