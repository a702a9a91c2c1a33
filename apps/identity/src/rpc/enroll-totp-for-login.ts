import type { identity } from '@secsvc/proto';
import { environmentOf } from '@secsvc/shared';
import type { MfaService } from '../services/mfa';
import { toFactorMessage } from './messages';

export const enrollTotpForLogin =
  (mfa: MfaService) =>
  async (req: identity.EnrollTotpForLoginRequest): Promise<identity.TotpEnrollment> => {
    const e = await mfa.enrollTotpForLogin(environmentOf(req.environment), req.mfaToken, req.name);
    return { factor: toFactorMessage(e.factor), secret: e.secret, otpauthUri: e.uri, qrCode: e.qrCode };
  };
