import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { PasswordsService } from '../services/passwords';
import { toLoginResponse } from './messages';

export const login =
  (passwords: PasswordsService) =>
  async (req: identity.LoginRequest, call: CallContext): Promise<identity.LoginResponse> =>
    toLoginResponse(await passwords.login(environmentOf(req.environment), req, call));
