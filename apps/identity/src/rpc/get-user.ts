import type { identity } from '@secsvc/proto';
import { AppError } from '@secsvc/shared';
import { environmentOf, toUserMessage, type IdentityContext } from '../context';
import { usersRepository } from '../repositories/users';

export const getUser =
  (ctx: IdentityContext) =>
  async (req: identity.GetUserRequest): Promise<identity.User> => {
    const row = await usersRepository.get(ctx.pool, environmentOf(req.environment), req.id);
    if (!row) throw AppError.notFound('User');
    return toUserMessage(row);
  };
