import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';

const SCRIPT = path.join(__dirname, 'smtp_server.py');
const PYTHON = process.env.PYTHON ?? 'python3';

/**
 * Why the SMTP tests cannot run here, or undefined when they can: they need python3 with the standard
 * library's smtpd module (Python 3.11 and older). Under CI=true a missing one throws: CI must not skip them.
 */
export function smtpdSkipReason(): string | undefined {
  const probe = spawnSync(PYTHON, ['-W', 'ignore', '-c', 'import smtpd, asyncore'], { encoding: 'utf8' });
  if (probe.status === 0) return undefined;
  const reason = `${PYTHON} with the smtpd module (Python <= 3.11) is missing (${probe.error?.message ?? probe.stderr.trim().split('\n').pop()}): SMTP tests skipped`;
  if (process.env.CI === 'true') throw new Error(reason);
  return reason;
}

export interface SmtpEvent {
  event: 'listening' | 'connect' | 'greeting' | 'tempfail' | 'rejected' | 'message';
  port?: number;
  n?: number;
  mailfrom?: string;
  rcpttos?: string[];
  from?: string;
  to?: string;
  subject?: string;
  body?: string;
}

export interface TestSmtp {
  port: number;
  /** smtp://127.0.0.1:<port> */
  url: string;
  /** Every event so far, in the order the server reported them. */
  events: SmtpEvent[];
  /** Called with each event as it arrives (after it is added to `events`). */
  onEvent?: (e: SmtpEvent) => void;
  /** Resolves with the first event (from the start) that matches, failing after `timeoutMs`. */
  waitFor: (match: (e: SmtpEvent) => boolean, timeoutMs?: number) => Promise<SmtpEvent>;
  /** Stops the server (SIGTERM, then SIGKILL); resolves once it has exited. */
  stop: () => Promise<void>;
}

/** A real SMTP server (Python's smtpd) on 127.0.0.1 and a port the kernel picked, owned by the calling test. */
export async function startTestSmtp(options: { greetingDelaySeconds?: number; tempfail?: number; reject?: boolean } = {}): Promise<TestSmtp> {
  const args = ['-W', 'ignore', SCRIPT, '--greeting-delay', String(options.greetingDelaySeconds ?? 0), '--tempfail', String(options.tempfail ?? 0)];
  if (options.reject) args.push('--reject');
  const child: ChildProcess = spawn(PYTHON, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const events: SmtpEvent[] = [];
  const waiters = new Set<() => void>();
  const server: TestSmtp = {
    port: 0,
    url: '',
    events,
    waitFor: (match, timeoutMs = 15_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const found = events.find(match);
          if (!found) return false;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(found);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no matching SMTP event within ${timeoutMs} ms; events: ${JSON.stringify(events)}; stderr: ${stderr}`));
        }, timeoutMs);
        if (!check()) waiters.add(check);
      }),
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(killer);
    },
  };
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const e = JSON.parse(line) as SmtpEvent;
    events.push(e);
    server.onEvent?.(e);
    for (const check of [...waiters]) check();
  });
  try {
    const listening = await server.waitFor((e) => e.event === 'listening', 10_000);
    server.port = listening.port!;
    server.url = `smtp://127.0.0.1:${server.port}`;
    return server;
  } catch (err) {
    await server.stop();
    throw err;
  }
}
