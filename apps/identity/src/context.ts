import type { identity } from '@secsvc/proto';
import type { Logger, Pool } from '@secsvc/shared';
import type { IdentityConfig } from './config';
import type { BackgroundWork } from './domain/background';
import type { MailOutbox } from './domain/mailer';
import type { UserRow } from './repositories/users';

// The request scoping and caller helpers are shared by every service.
export { callerOf, environmentOf } from '@secsvc/shared';

export interface IdentityContext {
  pool: Pool;
  config: IdentityConfig;
  logger: Logger;
  /** Where password reset messages are handed over: a MailQueue (absent: dropped with a warning). */
  mail?: MailOutbox;
  /** Work RPCs start after answering, waited for at shutdown (absent: run untracked). */
  background?: BackgroundWork;
}

export function toUserMessage(row: UserRow): identity.User {
  return {
    id: row.id,
    environment: row.environment,
    email: row.email,
    name: row.name,
    emailVerified: row.email_verified,
    roles: row.roles,
    metadataJson: row.metadata,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}
