import type { identity } from '@secsvc/proto';
import { newId, withTransaction, type CallContext } from '@secsvc/shared';
import { callerOf, environmentOf, toUserMessage, type IdentityContext } from '../context';
import { validateCreate } from '../domain/users';
import { appendEvent } from '../repositories/outbox';
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
      await appendEvent(client, {
        ...callerOf(call),
        environment,
        type: 'user.created',
        target: { id: user.id, type: 'user' },
        result: 'success',
        traceId: call.requestId,
      });
      return user;
    });
    return toUserMessage(row);
  };
