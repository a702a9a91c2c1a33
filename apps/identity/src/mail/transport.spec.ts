import { createLogger } from '@secsvc/shared';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadIdentityConfig } from '../config';
import { isTransientSmtpError, smtpPort, smtpTlsMode } from './smtp';
import { mailTransport } from './transport';

const base = { DATABASE_URL: 'postgres://u:p@db:5432/secsvc', SERVER_SECRET: 's'.repeat(40) };

function choose(env: Record<string, string>) {
  const lines: Record<string, unknown>[] = [];
  const printed: string[] = [];
  const logger = createLogger('identity', 'debug', { write: (line: string) => void lines.push(JSON.parse(line)) });
  const mailer = mailTransport(loadIdentityConfig({ ...base, ...env }), logger, (line) => printed.push(line));
  return { mailer, lines, printed };
}

describe('choosing the mail transport', () => {
  it('SMTP_URL wins over MAIL_DIR; the start-up line names the server and TLS mode, never the credentials', () => {
    const { mailer, lines } = choose({ SMTP_URL: 'smtp://mailer:hunter2@smtp.example.com', MAIL_FROM: 'no-reply@example.com', MAIL_DIR: '/tmp/x', PROFILE: 'distributed', KAFKA_BROKERS: 'k:9092' });
    expect(mailer.kind).toBe('smtp');
    expect(lines).toEqual([expect.objectContaining({ msg: 'mail transport: SMTP', host: 'smtp.example.com', port: 587, tls: 'STARTTLS required', auth: true })]);
    expect(JSON.stringify(lines)).not.toMatch(/hunter2|mailer/);
  });

  it('MAIL_DIR without SMTP_URL writes JSON files', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mail-'));
    try {
      const { mailer, lines, printed } = choose({ MAIL_DIR: dir });
      expect(mailer.kind).toBe('file');
      expect(lines).toEqual([]);
      await mailer.send({ to: 'a@example.com', subject: 'S', text: 'T', data: { kind: 'password-reset', token: 'prt_x' } });
      const [file] = await readdir(dir);
      expect(JSON.parse(await readFile(path.join(dir, file!), 'utf8'))).toMatchObject({ to: 'a@example.com', data: { token: 'prt_x' } });
      expect(printed[0]).toContain('[mail] to a@example.com: S');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('nothing configured: messages fail for good (the queue drops and counts them)', async () => {
    const { mailer } = choose({});
    expect(mailer.kind).toBe('none');
    await expect(mailer.send({ to: 'a@example.com', subject: 'S', text: 'T', data: {} })).rejects.toThrow('no mail transport configured (SMTP_URL or MAIL_DIR)');
    expect(mailer.isTransient!(new Error('x'))).toBe(false);
  });

  it.each([
    [{}, 'NOT delivered (dropped)'],
    [{ MAIL_DIR: '/tmp/x' }, 'only written to MAIL_DIR of this replica'],
  ])('PROFILE=distributed without SMTP_URL starts with a warning naming SMTP_URL (%p)', (env, says) => {
    const { lines } = choose({ PROFILE: 'distributed', KAFKA_BROKERS: 'k:9092', ...env });
    expect(lines).toEqual([expect.objectContaining({ level: 'warn', msg: expect.stringContaining('PROFILE=distributed without SMTP_URL') })]);
    expect(lines[0]!.msg).toContain(says);
    expect(lines[0]!.msg).toContain('set SMTP_URL and MAIL_FROM');
  });
});

describe('SMTP settings', () => {
  it('defaults the port by protocol and describes the TLS mode', () => {
    expect([smtpPort({ host: 'h', secure: false }), smtpPort({ host: 'h', secure: true }), smtpPort({ host: 'h', secure: false, port: 25 })]).toEqual([587, 465, 25]);
    expect([smtpTlsMode({ host: 'h', secure: true }, true), smtpTlsMode({ host: 'h', secure: false }, true), smtpTlsMode({ host: 'h', secure: false }, false)]).toEqual([
      'implicit TLS',
      'STARTTLS required',
      'STARTTLS when offered',
    ]);
  });

  it.each([
    [{ responseCode: 421 }, true],
    [{ responseCode: 451, code: 'EENVELOPE' }, true],
    [{ responseCode: 454, code: 'EAUTH' }, true],
    [{ responseCode: 503 }, true],
    [{ responseCode: 550, code: 'EENVELOPE' }, false],
    [{ responseCode: 535, code: 'EAUTH' }, false],
    [{ code: 'ECONNECTION' }, true],
    [{ code: 'ESOCKET' }, true],
    [{ code: 'ETIMEDOUT' }, true],
    [{ code: 'EDNS' }, true],
    [{ code: 'ETLS' }, false],
    [{ code: 'ENOAUTH' }, false],
    [{}, false],
    [undefined, false],
  ])('classifies %p as transient: %p', (err, transient) => {
    expect(isTransientSmtpError(err)).toBe(transient);
  });
});
