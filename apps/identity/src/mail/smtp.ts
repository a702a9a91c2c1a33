import { createTransport } from 'nodemailer';
import type { Mailbox, SmtpEndpoint } from '../config';
import type { Mailer } from '../domain/mailer';

export interface SmtpMailerOptions {
  endpoint: SmtpEndpoint;
  from: Mailbox;
  /** Time limit of connecting, of the greeting, of DNS and of any quiet moment on the socket. */
  timeoutMs: number;
  /** smtp:// only: fail unless the server offers STARTTLS (else STARTTLS is used when offered). */
  requireTls: boolean;
}

/** The port a URL without one means: submission (587) for smtp://, implicit TLS (465) for smtps://. */
export const smtpPort = (endpoint: SmtpEndpoint): number => endpoint.port ?? (endpoint.secure ? 465 : 587);

/** How the connection is protected, in words for the start-up log. */
export const smtpTlsMode = (endpoint: SmtpEndpoint, requireTls: boolean): string =>
  endpoint.secure ? 'implicit TLS' : requireTls ? 'STARTTLS required' : 'STARTTLS when offered';

/**
 * The SMTP transport (nodemailer): one connection per message (reset mail is rare; nothing is left open
 * between messages), the server certificate verified against the system CAs (NODE_EXTRA_CA_CERTS adds
 * a private one). Plain text messages: From MAIL_FROM, To the user, the subject and text of the message.
 */
export function smtpMailer(opts: SmtpMailerOptions): Mailer {
  const { endpoint } = opts;
  const transport = createTransport({
    host: endpoint.host,
    port: smtpPort(endpoint),
    secure: endpoint.secure,
    requireTLS: !endpoint.secure && opts.requireTls,
    ...(endpoint.username ? { auth: { user: endpoint.username, pass: endpoint.password ?? '' } } : {}),
    connectionTimeout: opts.timeoutMs,
    greetingTimeout: opts.timeoutMs,
    socketTimeout: opts.timeoutMs,
    dnsTimeout: opts.timeoutMs,
    // Messages are built from our own strings only: no attachment may read a file or fetch a URL.
    disableFileAccess: true,
    disableUrlAccess: true,
    logger: false,
    debug: false,
  });
  return {
    kind: 'smtp',
    async send(message) {
      await transport.sendMail({ from: opts.from, to: message.to, subject: message.subject, text: message.text });
    },
    isTransient: isTransientSmtpError,
    async close() {
      transport.close();
    },
  };
}

const CONNECTION_ERRORS = new Set(['ECONNECTION', 'ETIMEDOUT', 'ESOCKET', 'EDNS', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/**
 * Whether a later attempt may succeed: an SMTP reply of class 4 (RFC 5321: transient negative completion)
 * or 503 (a session in the wrong state; a new connection can go through), or a connection that failed or
 * timed out. Any other 5xx reply, authentication refused and a missing STARTTLS are permanent.
 */
export function isTransientSmtpError(err: unknown): boolean {
  const { responseCode, code } = (err ?? {}) as { responseCode?: unknown; code?: unknown };
  if (typeof responseCode === 'number') return !(responseCode >= 500 && responseCode < 600 && responseCode !== 503);
  return typeof code === 'string' && CONNECTION_ERRORS.has(code);
}
