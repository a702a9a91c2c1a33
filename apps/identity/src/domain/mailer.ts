import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  /** Machine-readable extras (e.g. the reset token), for tests and local tooling. */
  data: Record<string, string>;
}

/** The mail port: a transport that delivers one message (the mail queue's worker calls it, never an RPC). */
export interface Mailer {
  /** Which transport this is, for logs and metrics: `smtp`, `file`, `none`. */
  readonly kind?: string;
  send(message: MailMessage): Promise<void>;
  /** Whether a failed send may succeed later (the queue retries it); absent: every failure is retried. */
  isTransient?(err: unknown): boolean;
  /** Releases connections once the queue has stopped. */
  close?(): Promise<void>;
}

/**
 * Local profile: each message becomes a JSON file in `dir` (mode 0600) and a line on the console, so a
 * developer can follow a reset link without a mail server. Tokens never go to the structured log.
 */
export function fileMailer(dir: string, print: (line: string) => void): Mailer {
  return {
    kind: 'file',
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

/**
 * No transport configured: every message fails for good, so the queue drops it with a warning that names no
 * secret and counts it in identity_mail_failed_total (never as sent).
 */
export function nullMailer(): Mailer {
  return {
    kind: 'none',
    async send() {
      throw new Error('no mail transport configured (SMTP_URL or MAIL_DIR); message dropped');
    },
    isTransient: () => false,
  };
}
