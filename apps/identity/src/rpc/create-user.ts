import type { identity } from '@secsvc/proto';
import { newId, withTransaction, type CallContext } from '@secsvc/shared';
import { environmentOf, toUserMessage, type IdentityContext } from '../context';
import { validateCreate } from '../domain/users';
import { appendUserEvent } from '../repositories/outbox';
import { usersRepository } from '../repositories/users';

export const createUser =
  (ctx: IdentityContext) =>
  async (req: identity.CreateUserRequest, call: CallContext): Promise<identity.User> => {
    const environment = environmentOf(req.environment);
    const input = validateCreate(req);
    const row = await withTransaction(ctx.pool, async (client) => {
      const user = await usersRepository.insert(client, {
        id: newId('user'),
        environment,
        email: input.email,
        name: input.name,
        roles: input.roles,
        metadata: JSON.stringify(input.metadata),
      });
      await appendUserEvent(client, call, environment, 'user.created', user.id);
      return user;
    });
    return toUserMessage(row);
  };
