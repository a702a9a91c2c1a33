import type { identity } from '@secsvc/proto';
import { keysetPage, pageRequest } from '@secsvc/shared';
import { environmentOf, toUserMessage, type IdentityContext } from '../context';
import { usersRepository } from '../repositories/users';

export const MAX_PAGE = 100;

export const listUsers =
  (ctx: IdentityContext) =>
  async (req: identity.ListUsersRequest): Promise<identity.ListUsersResponse> => {
    const environment = environmentOf(req.environment);
    const scope = { kind: 'users', environment };
    const { limit, after } = pageRequest(req, scope, ctx.config.SERVER_SECRET, MAX_PAGE);
    const rows = await usersRepository.list(ctx.pool, environment, limit, after);
    const { page, hasMore, nextCursor } = keysetPage(rows, limit, scope, ctx.config.SERVER_SECRET);
    return { users: page.map(toUserMessage), hasMore, nextCursor };
  };
