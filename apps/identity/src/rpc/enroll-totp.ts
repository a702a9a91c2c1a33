import type { identity } from '@secsvc/proto';
import { environmentOf } from '@secsvc/shared';
import type { MfaService } from '../services/mfa';
import { toFactorMessage } from './messages';

export const enrollTotp =
  (mfa: MfaService) =>
  async (req: identity.EnrollTotpRequest): Promise<identity.TotpEnrollment> => {
    const e = await mfa.enrollTotp(environmentOf(req.environment), req.userId, req.name);
    return { factor: toFactorMessage(e.factor), secret: e.secret, otpauthUri: e.uri, qrCode: e.qrCode };
  };
