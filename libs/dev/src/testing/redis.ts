import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { freePort } from '../stack/ports';
import { findTool, type HarnessServerOptions } from './tools';

/**
 * The redis-server binary for tests: $REDIS_SERVER, else the first on PATH (the Debian package installs
 * /usr/bin/redis-server). Missing under CI=true is an error: CI installs it (.ci/run), so nothing may skip.
 */
export function findRedisServer(): string | undefined {
  return findTool('redis-server', 'REDIS_SERVER', 'install the Debian package redis-server (bash .ci/run does) or set REDIS_SERVER', ['/usr/bin/redis-server', '/usr/sbin/redis-server']);
}

/**
 * Why Redis tests cannot run here, or undefined when they can. Call it at the top of a test file and skip
 * that suite loudly with the reason; under CI=true a missing server throws instead (no skipping in CI).
 */
export function redisSkipReason(): string | undefined {
  return findRedisServer() ? undefined : 'redis-server not found (apt-get install redis-server, or set REDIS_SERVER): Redis tests skipped';
}

export interface TestRedis {
  /** redis://127.0.0.1:<port> */
  url: string;
  port: number;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s); resolves once it has exited. */
  stop: () => Promise<void>;
  /** Stops it and starts a fresh one on the same port (an empty dataset: nothing is persisted). */
  restart: () => Promise<void>;
  /** The server's process id (while it runs). */
  readonly pid: number | undefined;
}

/** True when something on 127.0.0.1:port answers PING with PONG. */
export function pingRedis(port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let answer = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      answer += chunk.toString('latin1');
      if (answer.includes('\r\n')) done(answer.startsWith('+PONG'));
    });
  });
}

/**
 * A real redis-server on a free port of 127.0.0.1, as a child process of the test (not daemonized, so the
 * test owns it and stop() really ends it), with persistence off. Resolves once it answers PING.
 */
export async function startTestRedis(options: HarnessServerOptions = {}): Promise<TestRedis> {
  const binary = options.binary ?? findRedisServer();
  if (!binary) throw new Error('redis-server not found (apt-get install redis-server, or set REDIS_SERVER)');
  const port = await freePort();
  const timeoutMs = options.startTimeoutMs ?? 10_000;
  let child: ChildProcess | undefined;

  const launch = async () => {
    const tail: string[] = [];
    const proc = spawn(binary, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = proc;
    for (const stream of [proc.stdout!, proc.stderr!]) {
      stream.on('data', (chunk: Buffer) => {
        tail.push(chunk.toString());
        if (tail.length > 20) tail.shift();
      });
    }
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (proc.exitCode !== null || proc.signalCode !== null) {
        throw new Error(`redis-server exited during start-up (${proc.signalCode ?? `code ${proc.exitCode}`}):\n${tail.join('')}`);
      }
      if (await pingRedis(port)) {
        proc.once('exit', (code, signal) => {
          if (child === proc) options.onUnexpectedExit?.(code, signal);
        });
        return;
      }
      if (Date.now() > deadline) {
        proc.kill('SIGKILL');
        throw new Error(`redis-server did not answer PING on port ${port} within ${timeoutMs} ms:\n${tail.join('')}`);
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  };

  const stop = async () => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((r) => proc.once('exit', () => r()));
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };

  await launch();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    get pid() {
      return child?.pid;
    },
    stop,
    restart: async () => {
      await stop();
      await launch();
    },
  };
}
