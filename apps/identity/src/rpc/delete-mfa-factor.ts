import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { MfaService } from '../services/mfa';

export const deleteMfaFactor =
  (mfa: MfaService) =>
  async (req: identity.DeleteMfaFactorRequest, call: CallContext): Promise<identity.DeleteMfaFactorResponse> => {
    await mfa.remove(environmentOf(req.environment), req.userId, req.factorId, call);
    return {};
  };
