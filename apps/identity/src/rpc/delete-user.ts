import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { UsersService } from '../services/users';

/** Deletes the user row (and with it the user's data); the audit event keeps only the id. */
export const deleteUser =
  (users: UsersService) =>
  async (req: identity.DeleteUserRequest, call: CallContext): Promise<identity.DeleteUserResponse> => {
    await users.delete(environmentOf(req.environment), req.id, call);
    return {};
  };
