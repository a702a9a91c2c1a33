import type { identity } from '@secsvc/proto';
import { environmentOf } from '@secsvc/shared';
import type { UsersService } from '../services/users';
import { toUserMessage } from './messages';

export const listUsers =
  (users: UsersService) =>
  async (req: identity.ListUsersRequest): Promise<identity.ListUsersResponse> => {
    const { page, hasMore, nextCursor } = await users.list(environmentOf(req.environment), req);
    return { users: page.map(toUserMessage), hasMore, nextCursor };
  };
