import type { identity } from '@secsvc/proto';
import { environmentOf } from '@secsvc/shared';
import type { UsersService } from '../services/users';
import { toUserMessage } from './messages';

export const getUser =
  (users: UsersService) =>
  async (req: identity.GetUserRequest): Promise<identity.User> =>
    toUserMessage(await users.get(environmentOf(req.environment), req.id));
