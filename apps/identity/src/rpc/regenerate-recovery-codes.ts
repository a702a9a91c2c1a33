import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { MfaService } from '../services/mfa';
import { toFactorMessage } from './messages';

export const regenerateRecoveryCodes =
  (mfa: MfaService) =>
  async (req: identity.RegenerateRecoveryCodesRequest, call: CallContext): Promise<identity.RecoveryCodes> => {
    const { factor, codes } = await mfa.regenerateRecoveryCodes(environmentOf(req.environment), req.userId, call);
    return { factor: toFactorMessage(factor), codes };
  };
