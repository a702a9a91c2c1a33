import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '@secsvc/shared';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  /** Machine-readable extras (e.g. the reset token), for tests and local tooling. */
  data: Record<string, string>;
}

/** The mail port: where password reset messages go. */
export interface Mailer {
  send(message: MailMessage): Promise<void>;
}

/**
 * Local profile: each message becomes a JSON file in `dir` (mode 0600) and a line on the console, so a
 * developer can follow a reset link without a mail server. Tokens never go to the structured log.
 */
export function fileMailer(dir: string, print: (line: string) => void): Mailer {
  return {
    async send(message) {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      const file = path.join(dir, `${Date.now()}-${message.data.kind ?? 'mail'}-${Math.random().toString(36).slice(2, 8)}.json`);
      // Written whole, then renamed: a reader never sees half a message.
      await writeFile(`${file}.part`, JSON.stringify(message, null, 2), { mode: 0o600 });
      await rename(`${file}.part`, file);
      print(`[mail] to ${message.to}: ${message.subject} (${file})`);
    },
  };
}

/** No transport configured: the message is dropped with a warning that names no secret. */
export function nullMailer(logger: Logger): Mailer {
  return {
    async send(message) {
      logger.warn({ subject: message.subject }, 'no mail transport configured (MAIL_DIR); message dropped');
    },
  };
}
