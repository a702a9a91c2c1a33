import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { PasswordsService } from '../services/passwords';

export const confirmPasswordReset =
  (passwords: PasswordsService) =>
  async (req: identity.ConfirmPasswordResetRequest, call: CallContext): Promise<identity.ConfirmPasswordResetResponse> => {
    await passwords.confirmReset(environmentOf(req.environment), req.token, req.password, call);
    return {};
  };
