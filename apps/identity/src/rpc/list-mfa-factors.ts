import type { identity } from '@secsvc/proto';
import { environmentOf } from '@secsvc/shared';
import type { MfaService } from '../services/mfa';
import { toFactorMessage } from './messages';

export const listMfaFactors =
  (mfa: MfaService) =>
  async (req: identity.ListMfaFactorsRequest): Promise<identity.ListMfaFactorsResponse> => {
    const { factors, mfaRequired } = await mfa.list(environmentOf(req.environment), req.userId);
    return { factors: factors.map(toFactorMessage), mfaRequired };
  };
