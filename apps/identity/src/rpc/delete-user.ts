import type { identity } from '@secsvc/proto';
import { AppError, withTransaction, type CallContext } from '@secsvc/shared';
import { environmentOf, type IdentityContext } from '../context';
import { appendUserEvent } from '../repositories/outbox';
import { usersRepository } from '../repositories/users';

/** Deletes the user row (and with it the user's data); the audit event keeps only the id. */
export const deleteUser =
  (ctx: IdentityContext) =>
  async (req: identity.DeleteUserRequest, call: CallContext): Promise<identity.DeleteUserResponse> => {
    const environment = environmentOf(req.environment);
    await withTransaction(ctx.pool, async (client) => {
      if (!(await usersRepository.delete(client, environment, req.id))) throw AppError.notFound('User');
      await appendUserEvent(client, call, environment, 'user.deleted', req.id);
    });
    return {};
  };
