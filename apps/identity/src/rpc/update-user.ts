import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { UsersService } from '../services/users';
import { toUserMessage } from './messages';

export const updateUser =
  (users: UsersService) =>
  async (req: identity.UpdateUserRequest, call: CallContext): Promise<identity.User> =>
    toUserMessage(await users.update(environmentOf(req.environment), req.id, req, call));
