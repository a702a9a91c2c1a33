import { checkHealth } from '@secsvc/shared';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { appEnvironment, launcherEnvironment, type AppName } from './app-environment';
import { Supervisor, type ExitStatus, type RestartDecision, type RestartPolicy } from './supervisor';
import { httpOk, supervisedApp, waitUntil, type AppProcess } from './app-process';
import { freePort } from './ports';
import { postgresAnswers, startEmbeddedPostgres, type EmbeddedPostgresServer } from './postgres';
import { launcherSamlSpKeys, samlSpEnv, type SamlSpKeyFiles } from './saml-sp-keys';


export interface LocalStackOptions {
  /** Repository root: apps are started from apps/<name>/dist/main.js. */
  rootDir: string;
  dataDir: string;
  host: string;
  /** Gateway port; 0 picks a free one. */
  port: number;
  /** Ports of everything else; 0 picks a free one. */
  ports: { postgres: number; identity: number; policy: number; audit: number; admin: Record<AppName, number> };
  /**
   * The user's environment (`npm start` passes process.env; tests a few settings): each app gets the variables its
   * config reads (appEnvironment), over the launcher's defaults (SERVER_SECRET, MAIL_DIR, ISSUER, CLICKHOUSE_PATH,
   * EXPORT_DIR) but not over its wiring (PROFILE, ports, hosts, DATABASE_URL, service addresses). Setting
   * SAML_SP_KEY_FILE or SAML_SP_CERT_FILE here replaces the generated SAML SP key pair (an empty value: no pair, SSO off).
   */
  env?: Record<string, string | undefined>;
  /** Every output line of every app, and of PostgreSQL. */
  onOutput?: (app: AppName | 'postgres', line: string) => void;
  /**
   * An app exited on its own after start-up: it is started again after `delayMs` (exponential backoff with
   * jitter, see supervisor.ts); the others keep running.
   */
  onRestart?: (app: AppName | 'postgres', exit: ExitStatus, decision: RestartDecision) => void;
  /** How apps are restarted (tests shorten it). */
  restartPolicy?: RestartPolicy;
  startTimeoutMs?: number;
  /** Extra node flags for every app (e.g. --cpu-prof for profiling). */
  nodeArgs?: string[];
}

export interface LocalStack {
  baseUrl: string;
  port: number;
  databaseUrl: string;
  grpc: { identity: string; policy: string; audit: string };
  admin: Record<AppName, string>;
  /** The generated admin key, when this start created one. */
  bootstrapKey?: string;
  /** The SAML SP key pair of the data directory the gateway got (absent when `env` configured its own). */
  samlSp?: SamlSpKeyFiles;
  /** Stops every app (SIGTERM, in reverse start order) and PostgreSQL; resolves to each app's exit code. */
  stop: () => Promise<Partial<Record<AppName, number | null>>>;
  /** Ends one app (SIGKILL by default: a crash) and starts it again on the same ports; resolves once healthy. */
  restart: (app: AppName, signal?: NodeJS.Signals) => Promise<void>;
  /** The process id of a running app (benchmarks read its memory), or of PostgreSQL's postmaster. */
  pid: (app: AppName | 'postgres') => number | undefined;
  /** Resolves once `app` answers its health check again (after a crash and its automatic restart). */
  healthy: (app: AppName | 'postgres', timeoutMs?: number) => Promise<void>;
}

interface Secrets {
  serverSecret: string;
  postgresPassword: string;
}

/** Secrets of a local data directory: made once (mode 0600), reused on every restart so keys stay valid. */
export async function loadStackSecrets(dataDir: string): Promise<Secrets> {
  const file = path.join(dataDir, 'secrets.json');
  if (existsSync(file)) return JSON.parse(await readFile(file, 'utf8')) as Secrets;
  const secrets = { serverSecret: randomBytes(32).toString('base64url'), postgresPassword: randomBytes(18).toString('base64url') };
  await writeFile(file, JSON.stringify(secrets), { mode: 0o600 });
  return secrets;
}

const pick = async (port: number) => (port === 0 ? freePort() : port);

/**
 * The local profile as separate processes: embedded PostgreSQL, then identity, policy, audit and the export
 * worker (each applies its migrations), then the gateway once they are healthy. stop() ends them in reverse.
 */
export async function startLocalStack(opts: LocalStackOptions): Promise<LocalStack> {
  const deadline = Date.now() + (opts.startTimeoutMs ?? 60_000);
  // 0711: other users (the postgres user, when we run as root) may pass through but not list it.
  await mkdir(opts.dataDir, { recursive: true, mode: 0o711 });
  await chmod(opts.dataDir, 0o711);
  const secrets = await loadStackSecrets(opts.dataDir);
  const out = opts.onOutput ?? (() => undefined);
  // Made (on a fresh data directory) while PostgreSQL starts; awaited before any app runs.
  const samlSpKeys = launcherSamlSpKeys(opts.dataDir, opts.host, opts.env);
  samlSpKeys.catch(() => undefined); // rejections are handled where it is awaited; this only keeps them from counting as unhandled meanwhile

  const pgPort = await pick(opts.ports.postgres);
  const procs = new Map<AppName, AppProcess>();
  const supervisor = new Supervisor<AppName | 'postgres'>(opts.restartPolicy, opts.onRestart, (name, err) => out(name, `restart failed: ${err.message}`));
  let started = false;
  // PostgreSQL is supervised too: started again on the same port and data directory (crash recovery runs); the
  // services reconnect by themselves, answering 503 meanwhile.
  const startPostgres = (): Promise<EmbeddedPostgresServer> =>
    startEmbeddedPostgres({
      dataDir: path.join(opts.dataDir, 'postgres'),
      port: pgPort,
      password: secrets.postgresPassword,
      onLog: (line) => out('postgres', line),
      onUnexpectedExit: (code, signal) =>
        supervisor.crashed('postgres', { code, signal }, async () => {
          pg = await startPostgres();
        }),
    });
  let pg: EmbeddedPostgresServer = await startPostgres();
  let startupFailure: string | undefined;
  let bootstrapKey: string | undefined;

  const stop = async () => {
    supervisor.stop();
    const codes: Partial<Record<AppName, number | null>> = {};
    for (const name of ['gateway', 'export-worker', 'audit', 'policy', 'identity'] as AppName[]) {
      const proc = procs.get(name);
      if (proc) codes[name] = await proc.stop();
    }
    await pg.stop();
    return codes;
  };

  try {
    const samlSp = await samlSpKeys;
    const databaseUrl = await pg.ensureDatabase('secsvc');
    const grpcPorts = { identity: await pick(opts.ports.identity), policy: await pick(opts.ports.policy), audit: await pick(opts.ports.audit) };
    const adminPorts = {} as Record<AppName, number>;
    for (const name of Object.keys(opts.ports.admin) as AppName[]) adminPorts[name] = await pick(opts.ports.admin[name]);
    const gatewayPort = await pick(opts.port);
    // Access tokens name the gateway's public origin as their issuer; identity signs, the gateway checks.
    const issuer = `http://${opts.host}:${gatewayPort}`;
    const grpc = {
      identity: `127.0.0.1:${grpcPorts.identity}`,
      policy: `127.0.0.1:${grpcPorts.policy}`,
      audit: `127.0.0.1:${grpcPorts.audit}`,
    };
    const userEnv = { PATH: process.env.PATH, ...opts.env };
    const grpcPortOf: Partial<Record<AppName, number>> = grpcPorts;
    const launch = (name: AppName) => {
      const env = appEnvironment(
        name,
        userEnv,
        launcherEnvironment({
          profile: 'local',
          dataDir: opts.dataDir,
          databaseUrl,
          serverSecret: secrets.serverSecret,
          issuer,
          // The worker reads rows through audit's StreamLogs (unless CLICKHOUSE_URL: embedded ClickHouse admits one process).
          addresses: grpc,
          adminPort: adminPorts[name],
          grpcPort: grpcPortOf[name],
          ...(name === 'gateway' && { gatewayHost: opts.host, gatewayPort }),
          samlSp: samlSpEnv(samlSp),
        }),
      );
      const proc = supervisedApp(name, {
        rootDir: opts.rootDir,
        app: name,
        env,
        nodeArgs: opts.nodeArgs,
        supervisor,
        started: () => started,
        startupFailed: (reason) => void (startupFailure ??= reason),
        bootstrapKey: (key) => void (bootstrapKey = key),
        out,
      });
      procs.set(name, proc);
      proc.start();
    };

    launch('identity');
    launch('policy');
    launch('audit');
    launch('export-worker');
    const failed = () => startupFailure;
    await Promise.all([
      waitUntil('identity', () => checkHealth(grpc.identity), deadline, failed),
      waitUntil('policy', () => checkHealth(grpc.policy), deadline, failed),
      waitUntil('audit', () => checkHealth(grpc.audit), deadline, failed),
      waitUntil('export-worker', () => httpOk(`http://127.0.0.1:${adminPorts['export-worker']}/readyz`), deadline, failed),
    ]);
    launch('gateway');
    const baseUrl = `http://${opts.host}:${gatewayPort}`;
    await waitUntil('gateway', () => httpOk(`${baseUrl}/readyz`), deadline, failed);
    const admin = Object.fromEntries(
      (Object.keys(adminPorts) as AppName[]).map((n) => [n, `http://127.0.0.1:${adminPorts[n]}`]),
    ) as Record<AppName, string>;
    const healthy: Record<AppName, () => Promise<boolean>> = {
      identity: () => checkHealth(grpc.identity),
      policy: () => checkHealth(grpc.policy),
      audit: () => checkHealth(grpc.audit),
      'export-worker': () => httpOk(`${admin['export-worker']}/readyz`),
      gateway: () => httpOk(`${baseUrl}/readyz`),
    };
    const restart = async (name: AppName, signal: NodeJS.Signals = 'SIGKILL') => {
      const proc = procs.get(name)!;
      await proc.stop(signal);
      proc.start();
      await waitUntil(name, healthy[name], Date.now() + (opts.startTimeoutMs ?? 60_000), () => startupFailure);
    };
    const pid = (name: AppName | 'postgres') => (name === 'postgres' ? pg.pid : procs.get(name)?.pid);
    const healthyAgain = (name: AppName | 'postgres', timeoutMs = 60_000) =>
      waitUntil(name, name === 'postgres' ? () => postgresAnswers(databaseUrl) : healthy[name], Date.now() + timeoutMs);
    started = true;
    return { baseUrl: `${baseUrl}/v1`, port: gatewayPort, databaseUrl, grpc, admin, bootstrapKey, samlSp, stop, restart, pid, healthy: healthyAgain };
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  }
}
