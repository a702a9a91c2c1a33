import { ConfigError } from '@secsvc/shared';
import { loadIdentityConfig, parseMailbox, parseSmtpUrl } from './config';

const base = { DATABASE_URL: 'postgres://u:p@db:5432/secsvc', SERVER_SECRET: 's'.repeat(40) };

function problems(env: Record<string, string>): string[] {
  try {
    loadIdentityConfig({ ...base, ...env });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('the configuration was accepted');
}

describe('mail configuration', () => {
  it('needs no mail settings; SMTP defaults: 10 s timeout, STARTTLS required', () => {
    const config = loadIdentityConfig(base);
    expect([config.SMTP_URL, config.MAIL_FROM, config.SMTP_TIMEOUT_MS, config.SMTP_REQUIRE_TLS]).toEqual([undefined, undefined, 10_000, true]);
  });

  it('reads SMTP_URL with MAIL_FROM, the sender parsed into name and address', () => {
    const config = loadIdentityConfig({ ...base, SMTP_URL: 'smtps://mailer:s3cret@smtp.example.com', MAIL_FROM: '"Security, Inc." <no-reply@example.com>', SMTP_TIMEOUT_MS: '2500', SMTP_REQUIRE_TLS: 'false' });
    expect(config.MAIL_FROM).toEqual({ name: 'Security, Inc.', address: 'no-reply@example.com' });
    expect([config.SMTP_TIMEOUT_MS, config.SMTP_REQUIRE_TLS]).toEqual([2500, false]);
  });

  it('refuses SMTP_URL without MAIL_FROM, naming MAIL_FROM', () => {
    expect(problems({ SMTP_URL: 'smtp://smtp.example.com:587' })).toEqual(['MAIL_FROM: required with SMTP_URL (not set)']);
  });

  it.each(['http://smtp.example.com', 'smtp://', 'smtp.example.com:25', 'smtp://smtp.example.com/path', 'smtp://smtp.example.com?tls=1', 'smtp://u:%zz@smtp.example.com'])(
    'refuses the SMTP_URL %p, naming it and hiding the value',
    (url) => {
      const [line, ...rest] = problems({ SMTP_URL: url, MAIL_FROM: 'no-reply@example.com' });
      expect(rest).toEqual([]);
      expect(line).toBe('SMTP_URL: must be smtp://[user:password@]host[:port] or smtps://[user:password@]host[:port] (value hidden)');
    },
  );

  it.each(['no-reply', 'Security <no-reply>', 'a@b.example, c@d.example', 'Name <a@b.example>\r\nBcc: x@y.example', '<>'])('refuses the MAIL_FROM %p, naming it', (from) => {
    expect(problems({ SMTP_URL: 'smtp://smtp.example.com', MAIL_FROM: from })).toEqual([
      expect.stringMatching(/^MAIL_FROM: must be an address, optionally with a display name: Name <address> \(got ".*"\)$/s),
    ]);
  });

  it('takes credentials in SMTP_URL or in SMTP_USERNAME/SMTP_PASSWORD, not half of them, not both places', () => {
    const mail = { SMTP_URL: 'smtp://smtp.example.com', MAIL_FROM: 'no-reply@example.com' };
    expect(loadIdentityConfig({ ...base, ...mail, SMTP_USERNAME: 'mailer', SMTP_PASSWORD: 'pw' }).SMTP_USERNAME).toBe('mailer');
    expect(problems({ ...mail, SMTP_USERNAME: 'mailer' })).toEqual(['SMTP_USERNAME, SMTP_PASSWORD: set both or neither']);
    expect(problems({ ...mail, SMTP_URL: 'smtp://mailer:pw@smtp.example.com', SMTP_USERNAME: 'u', SMTP_PASSWORD: 'p' })).toEqual([
      'SMTP_USERNAME, SMTP_PASSWORD: the credentials are in SMTP_URL already; give them in one place',
    ]);
    expect(problems({ ...mail, SMTP_URL: 'smtp://mailer@smtp.example.com' })).toEqual(['SMTP_URL: give the user and the password together, or neither']);
    expect(problems({ SMTP_PASSWORD: 'pw', SMTP_USERNAME: 'u' })).toEqual(['SMTP_USERNAME, SMTP_PASSWORD: only used with SMTP_URL (not set)']);
  });

  it('never shows a secret in an error', () => {
    const lines = problems({ SMTP_URL: 'ftp://mailer:hunter2-secret@smtp.example.com', SMTP_PASSWORD: 'hunter3-secret' });
    expect(lines.join('\n')).not.toMatch(/hunter/);
  });

  it.each(['0', '99', '600001', '10s'])('refuses SMTP_TIMEOUT_MS=%p, naming it', (value) => {
    expect(problems({ SMTP_TIMEOUT_MS: value })).toEqual([`SMTP_TIMEOUT_MS: must be an integer from 100 to 600000 (got "${value}")`]);
  });
});

describe('parseSmtpUrl', () => {
  it('reads host, port, TLS mode and %-decoded credentials', () => {
    expect(parseSmtpUrl('smtp://smtp.example.com')).toEqual({ host: 'smtp.example.com', secure: false });
    expect(parseSmtpUrl('smtps://a%40b:p%3Aw%2Fd@[::1]:2465/')).toEqual({ host: '::1', port: 2465, secure: true, username: 'a@b', password: 'p:w/d' });
  });
});

describe('parseMailbox', () => {
  it.each([
    ['no-reply@example.com', { address: 'no-reply@example.com' }],
    ['  Security Service <no-reply@example.com> ', { name: 'Security Service', address: 'no-reply@example.com' }],
    ['"Ops \\"Team\\"" <ops@example.com>', { name: 'Ops "Team"', address: 'ops@example.com' }],
    ['<ops@example.com>', { address: 'ops@example.com' }],
  ])('%p', (value, mailbox) => {
    expect(parseMailbox(value)).toEqual(mailbox);
  });
});
