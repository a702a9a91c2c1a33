import type { identity } from '@secsvc/proto';
import { AppError, decodeCursor, encodeCursor } from '@secsvc/shared';
import { environmentOf, toUserMessage, type IdentityContext } from '../context';
import { usersRepository } from '../repositories/users';

export const MAX_PAGE = 100;

export const listUsers =
  (ctx: IdentityContext) =>
  async (req: identity.ListUsersRequest): Promise<identity.ListUsersResponse> => {
    const environment = environmentOf(req.environment);
    if (!Number.isInteger(req.limit) || req.limit < 1 || req.limit > MAX_PAGE) {
      throw AppError.field('limit', `must be an integer from 1 to ${MAX_PAGE}`);
    }
    const after = req.cursor
      ? decodeCursor(req.cursor, { kind: 'users', environment }, ctx.config.SERVER_SECRET)
      : undefined;
    const rows = await usersRepository.list(ctx.pool, environment, req.limit, after);
    const page = rows.slice(0, req.limit);
    const hasMore = rows.length > req.limit;
    return {
      users: page.map(toUserMessage),
      hasMore,
      nextCursor: hasMore
        ? encodeCursor({ kind: 'users', environment, after: page[page.length - 1]!.id }, ctx.config.SERVER_SECRET)
        : '',
    };
  };
