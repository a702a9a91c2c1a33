import type { identity } from '@secsvc/proto';
import { AppError, withTransaction, type CallContext } from '@secsvc/shared';
import { environmentOf, toUserMessage, type IdentityContext } from '../context';
import { validateUpdate } from '../domain/users';
import { appendUserEvent } from '../repositories/outbox';
import { usersRepository } from '../repositories/users';

export const updateUser =
  (ctx: IdentityContext) =>
  async (req: identity.UpdateUserRequest, call: CallContext): Promise<identity.User> => {
    const environment = environmentOf(req.environment);
    const changes = validateUpdate(req);
    const row = await withTransaction(ctx.pool, async (client) => {
      const user = await usersRepository.update(client, environment, req.id, {
        name: changes.name,
        metadata: changes.metadata === undefined ? undefined : JSON.stringify(changes.metadata),
      });
      if (!user) throw AppError.notFound('User');
      await appendUserEvent(client, call, environment, 'user.updated', user.id, { fields: Object.keys(changes) });
      return user;
    });
    return toUserMessage(row);
  };
