import type { identity } from '@secsvc/proto';
import type { Logger, Pool } from '@secsvc/shared';
import type { IdentityConfig } from './config';
import type { MailQueue } from './mail/queue';
import type { UserRow } from './repositories/users';

// The request scoping and caller helpers are shared by every service.
export { callerOf, environmentOf } from '@secsvc/shared';

export interface IdentityContext {
  pool: Pool;
  config: IdentityConfig;
  logger: Logger;
  /**
   * Wakes this process's mail worker after a job was queued in mail_jobs (absent: the job waits for a worker's
   * next poll, in any replica).
   */
  mail?: Pick<MailQueue, 'wake'>;
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
