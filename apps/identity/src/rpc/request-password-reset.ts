import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { PasswordsService } from '../services/passwords';

/** Answered once the request is queued; the answer says nothing about whether the email has an account. */
export const requestPasswordReset =
  (passwords: PasswordsService) =>
  async (req: identity.RequestPasswordResetRequest, call: CallContext): Promise<identity.RequestPasswordResetResponse> => {
    await passwords.requestReset(environmentOf(req.environment), req.email, call);
    return {};
  };
