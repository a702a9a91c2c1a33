import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { UsersService } from '../services/users';
import { toUserMessage } from './messages';

export const createUser =
  (users: UsersService) =>
  async (req: identity.CreateUserRequest, call: CallContext): Promise<identity.User> =>
    toUserMessage(await users.create(environmentOf(req.environment), req, call));
