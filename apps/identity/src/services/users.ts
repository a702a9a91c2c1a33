import { AppError, eventOfCall, newId, parseOrThrow, type CallContext, type EventInput } from '@secsvc/shared';
import { emailSearchSchema, validateCreate, validateUpdate } from '../domain/users';
import type { usersRepository, UserRow } from '../repositories/users';
import { listPage, type Database, type Outbox, type Page, type PageInput } from './ports';

export type UsersRepository = Pick<typeof usersRepository, 'insert' | 'get' | 'update' | 'delete' | 'list'>;

export interface UsersDeps {
  db: Database;
  users: UsersRepository;
  outbox: Outbox;
  /** Signs list cursors. */
  serverSecret: string;
}

export const MAX_USERS_PAGE = 100;

export type UserEventType = 'user.created' | 'user.updated' | 'user.deleted';

/** A successful user.* event about `userId`, by the caller of `call` (the API key, from gateway metadata). */
export function userEvent(call: CallContext, environment: string, type: UserEventType, userId: string, metadata?: Record<string, unknown>): EventInput {
  return eventOfCall(call, { environment, type, target: { id: userId, type: 'user' }, result: 'success', metadata });
}

/** The users of an environment: each change and its user.* event in one transaction. */
export class UsersService {
  constructor(private readonly deps: UsersDeps) {}

  async create(environment: string, input: { email: string; name: string; roles: string[]; metadataJson: string }, call: CallContext): Promise<UserRow> {
    const valid = validateCreate(input);
    const { db, users, outbox } = this.deps;
    return db.transaction(async (tx) => {
      const user = await users.insert(tx, {
        id: newId('user'),
        environment,
        email: valid.email,
        name: valid.name,
        roles: valid.roles,
        metadata: JSON.stringify(valid.metadata),
      });
      await outbox.append(tx, userEvent(call, environment, 'user.created', user.id));
      return user;
    });
  }

  async get(environment: string, id: string): Promise<UserRow> {
    const row = await this.deps.users.get(this.deps.db.pool, environment, id);
    if (!row) throw AppError.notFound('User');
    return row;
  }

  async update(environment: string, id: string, input: { name?: string; metadataJson?: string; roles?: { values: string[] } }, call: CallContext): Promise<UserRow> {
    const changes = validateUpdate(input);
    const { db, users, outbox } = this.deps;
    return db.transaction(async (tx) => {
      const user = await users.update(tx, environment, id, {
        name: changes.name,
        metadata: changes.metadata === undefined ? undefined : JSON.stringify(changes.metadata),
        roles: changes.roles,
      });
      if (!user) throw AppError.notFound('User');
      await outbox.append(tx, userEvent(call, environment, 'user.updated', user.id, { fields: Object.keys(changes) }));
      return user;
    });
  }

  /** Deletes the user row (and with it the user's data); the audit event keeps only the id. */
  async delete(environment: string, id: string, call: CallContext): Promise<void> {
    const { db, users, outbox } = this.deps;
    await db.transaction(async (tx) => {
      if (!(await users.delete(tx, environment, id))) throw AppError.notFound('User');
      await outbox.append(tx, userEvent(call, environment, 'user.deleted', id));
    });
  }

  /** Newest first; with `email`, only the users whose email contains it (case-insensitive). */
  async list(environment: string, page: PageInput & { email?: string }): Promise<Page<UserRow>> {
    const { db, users, serverSecret } = this.deps;
    const email = page.email === undefined || page.email === '' ? undefined : parseOrThrow(emailSearchSchema, page.email, 'email');
    return listPage(serverSecret, 'users', environment, page, (limit, after) => users.list(db.pool, environment, limit, after, email), MAX_USERS_PAGE);
  }
}
