import type { Logger, Pool } from '@secsvc/shared';
import type { IdentityConfig } from './config';
import type { MailQueue } from './mail/queue';

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
