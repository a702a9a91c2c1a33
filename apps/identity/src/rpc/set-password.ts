import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { PasswordsService } from '../services/passwords';

export const setPassword =
  (passwords: PasswordsService) =>
  async (req: identity.SetPasswordRequest, call: CallContext): Promise<identity.SetPasswordResponse> => {
    await passwords.set(environmentOf(req.environment), req.userId, req.password, call);
    return {};
  };
