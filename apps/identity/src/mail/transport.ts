import type { Logger } from '@secsvc/shared';
import { parseSmtpUrl, type IdentityConfig } from '../config';
import { fileMailer, nullMailer, type Mailer } from '../domain/mailer';
import { smtpMailer, smtpPort, smtpTlsMode } from './smtp';

type MailSettings = Pick<
  IdentityConfig,
  'PROFILE' | 'MAIL_DIR' | 'SMTP_URL' | 'SMTP_USERNAME' | 'SMTP_PASSWORD' | 'MAIL_FROM' | 'SMTP_TIMEOUT_MS' | 'SMTP_REQUIRE_TLS'
>;

/**
 * The transport the configuration names: SMTP_URL → SMTP, else MAIL_DIR → JSON files, else none (messages
 * dropped with a warning). The distributed profile without SMTP_URL starts, with a warning naming SMTP_URL.
 * The start-up log names the server and its TLS mode, never the credentials.
 */
export function mailTransport(config: MailSettings, logger: Logger, print: (line: string) => void): Mailer {
  if (config.SMTP_URL) {
    const inUrl = parseSmtpUrl(config.SMTP_URL)!;
    const endpoint = config.SMTP_USERNAME ? { ...inUrl, username: config.SMTP_USERNAME, password: config.SMTP_PASSWORD } : inUrl;
    const tls = smtpTlsMode(endpoint, config.SMTP_REQUIRE_TLS);
    logger.info({ host: endpoint.host, port: smtpPort(endpoint), tls, auth: !!endpoint.username }, 'mail transport: SMTP');
    return smtpMailer({ endpoint, from: config.MAIL_FROM!, timeoutMs: config.SMTP_TIMEOUT_MS, requireTls: config.SMTP_REQUIRE_TLS });
  }
  if (config.PROFILE === 'distributed') {
    logger.warn(
      { fallback: config.MAIL_DIR ? 'MAIL_DIR' : 'none' },
      `PROFILE=distributed without SMTP_URL: password reset e-mails are ${config.MAIL_DIR ? 'only written to MAIL_DIR of this replica' : 'NOT delivered (dropped)'}; set SMTP_URL and MAIL_FROM`,
    );
  }
  if (config.MAIL_DIR) return fileMailer(config.MAIL_DIR, print);
  return nullMailer();
}
