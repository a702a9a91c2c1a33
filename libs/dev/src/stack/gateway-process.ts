import { spawn } from 'node:child_process';
import path from 'node:path';
import type { LocalStack } from './local-stack';
import { freePort } from './ports';
import { samlSpEnv } from './saml-sp-keys';

export interface GatewayProcess {
  /** http://127.0.0.1:<port>/v1 */
  baseUrl: string;
  /** The admin port's origin (/healthz, /readyz, /metrics). */
  adminUrl: string;
  /** SIGTERM; resolves with the exit code. */
  stop: () => Promise<number | null>;
  /** The process id (with GATEWAY_WORKERS > 1, the cluster primary's). */
  pid: number;
}

/**
 * One more gateway process on a running local stack's services (a second replica), on free ports of
 * 127.0.0.1, resolved once it is ready. `env` adds to or overrides its configuration (REDIS_URL,
 * RATE_LIMIT_STORE, ...). The caller stops it.
 */
export async function startGatewayProcess(opts: {
  rootDir: string;
  /** The stack's SAML SP key pair (`samlSp`), when given, is this gateway's too. */
  stack: Pick<LocalStack, 'grpc' | 'baseUrl'> & Partial<Pick<LocalStack, 'samlSp'>>;
  env?: Record<string, string>;
  /** The child's stdout and stderr: dropped (default) or shown. */
  output?: 'ignore' | 'inherit';
  /** Each line the child writes on stdout or stderr (instead of `output`). */
  onOutput?: (line: string) => void;
  startTimeoutMs?: number;
}): Promise<GatewayProcess> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, [path.join(opts.rootDir, 'apps/gateway/dist/main.js')], {
    env: {
      PATH: process.env.PATH,
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      IDENTITY_ADDR: opts.stack.grpc.identity,
      POLICY_ADDR: opts.stack.grpc.policy,
      AUDIT_ADDR: opts.stack.grpc.audit,
      ISSUER: opts.stack.baseUrl.replace(/\/v1$/, ''),
      LOG_LEVEL: 'warn',
      // One process, like the launchers' gateways (GATEWAY_WORKERS in `env` for a cluster).
      GATEWAY_WORKERS: '1',
      ...samlSpEnv(opts.stack.samlSp),
      ...opts.env,
    },
    stdio: ['ignore', opts.onOutput ? 'pipe' : (opts.output ?? 'ignore'), opts.onOutput ? 'pipe' : (opts.output ?? 'ignore')],
  });
  for (const stream of opts.onOutput ? [child.stdout!, child.stderr!] : []) {
    let rest = '';
    stream.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop()!;
      for (const line of lines) opts.onOutput!(line);
    });
  }
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    child.kill('SIGTERM');
    return exited;
  };
  const origin = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + (opts.startTimeoutMs ?? 30_000);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`gateway exited during start-up (code ${child.exitCode})`);
    if (await fetch(`${origin}/readyz`, { signal: AbortSignal.timeout(1000) }).then((r) => r.ok, () => false)) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error('gateway did not become ready in time');
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { baseUrl: `${origin}/v1`, adminUrl: `http://127.0.0.1:${adminPort}`, stop, pid: child.pid! };
}
