import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { PasswordsService } from '../services/passwords';
import { toCreatedSession } from './messages';

export const login =
  (passwords: PasswordsService) =>
  async (req: identity.LoginRequest, call: CallContext): Promise<identity.CreatedSession> =>
    toCreatedSession(await passwords.login(environmentOf(req.environment), req, call));
