import { checkHealth } from '@secsvc/shared';
import { chmod, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { kafkaAnswers, startKafka, type KafkaTestBroker } from '../testing/kafka';
import { pingRedis, startTestRedis, type TestRedis } from '../testing/redis';
import { startTestS3, type TestS3 } from '../testing/s3';
import { APP_NAMES, appEnvironment, launcherEnvironment, type AppName } from './app-environment';
import { httpOk, supervisedApp, waitUntil, type AppProcess } from './app-process';
import { startLoadBalancer, type LoadBalancer } from './load-balancer';
import { loadStackSecrets } from './local-stack';
import { freePort } from './ports';
import { postgresAnswers, startEmbeddedPostgres, type EmbeddedPostgresServer } from './postgres';
import { launcherSamlSpKeys, samlSpEnv, type SamlSpKeyFiles } from './saml-sp-keys';
import { Supervisor, type ExitStatus, type RestartDecision, type RestartPolicy } from './supervisor';

type Replicated = 'gateway' | 'identity' | 'policy' | 'export-worker';

/** What the distributed launcher runs besides the app instances, supervised like them. */
export type Dependency = 'postgres' | 'kafka' | 'redis' | 's3';

export interface DistributedStackOptions {
  /** Repository root: apps are started from apps/<name>/dist/main.js. */
  rootDir: string;
  dataDir: string;
  /** The load balancer's address (0 = a free port). */
  host: string;
  port: number;
  /** Replicas of each stateless app (default 2 each); the audit service runs once (it owns embedded ClickHouse). */
  replicas?: Partial<Record<Replicated, number>>;
  /**
   * Fixed ports (0 or absent: free ports). Replica i (from 0) of a gRPC service listens on its port + i; the admin
   * port of replica i of an app is adminBase + (gateway 0, identity 1, policy 2, audit 3, export-worker 4) + 5·i.
   */
  ports?: { postgres?: number; identity?: number; policy?: number; audit?: number; adminBase?: number };
  /**
   * The user's environment, as in the local stack (appEnvironment): each app gets what its config reads, over the
   * launcher's defaults (SERVER_SECRET, MAIL_DIR, ISSUER, CLICKHOUSE_PATH, RATE_LIMIT_STORE) but not over its
   * wiring (PROFILE, ports, hosts, DATABASE_URL, addresses, EVENT_BUS and KAFKA_BROKERS, REDIS_URL, the S3 store).
   * SAML_SP_KEY_FILE / SAML_SP_CERT_FILE: as in the local stack.
   */
  env?: Record<string, string | undefined>;
  /** Every output line of every app instance (`identity-2`, ...). */
  onOutput?: (instance: string, line: string) => void;
  /**
   * An instance (`identity-2`) or a dependency exited on its own after start-up: it is started again after
   * `delayMs` (exponential backoff with jitter, see supervisor.ts) on the same ports; the rest keeps running.
   */
  onRestart?: (name: string, exit: ExitStatus, decision: RestartDecision) => void;
  /** How instances and dependencies are restarted (tests shorten it). */
  restartPolicy?: RestartPolicy;
  startTimeoutMs?: number;
}

export interface DistributedStack {
  /** The load balancer in front of the gateways: http://host:port/v1 */
  baseUrl: string;
  /** Each gateway directly: http://127.0.0.1:<port>/v1 */
  gateways: string[];
  /** gRPC addresses of every replica. */
  grpc: { identity: string[]; policy: string[]; audit: string };
  databaseUrl: string;
  postgresPort: number;
  kafkaBrokers: string[];
  redisUrl: string;
  s3: Pick<TestS3, 'endpoint' | 'env'> & { bucket: string };
  /** The generated admin key, when this start created one (not when env gave BOOTSTRAP_API_KEY or the data had keys). */
  bootstrapKey?: string;
  /** The SAML SP key pair every gateway replica got, from `<dataDir>/saml-sp/` (absent when `env` set its own). */
  samlSp?: SamlSpKeyFiles;
  /** Admin origin (/healthz, /readyz, /metrics) of each instance, e.g. admin['export-worker-1']. */
  admin: Record<string, string>;
  /** Instances by name: gateway-1, gateway-2, identity-1, ..., audit-1. */
  instances: string[];
  /** The process id of an instance or a dependency (PostgreSQL's postmaster, the broker, redis-server, versitygw). */
  pid: (name: string) => number | undefined;
  /** Resolves once an instance or a dependency answers its health check (after a crash and its automatic restart). */
  healthy: (name: string, timeoutMs?: number) => Promise<void>;
  /** Ends one instance on purpose (SIGKILL: a crash; SIGTERM: a drain); it is not restarted until start(). Resolves to its exit code. */
  kill: (instance: string, signal?: NodeJS.Signals) => Promise<number | null>;
  /** Starts a killed instance again on its ports; resolves once it is healthy. */
  start: (instance: string) => Promise<void>;
  /** The instance whose process has this id (apps name themselves by pid, e.g. an export job's worker_id). */
  instanceOfPid: (pid: number) => string | undefined;
  stop: () => Promise<void>;
}

/**
 * The distributed profile on one machine: a real Kafka broker (KRaft), redis-server, versitygw (S3) and
 * PostgreSQL, then two replicas of identity, policy, export-worker and gateway (one audit service: no
 * ClickHouse server can be installed here, so the log store is embedded chdb), and a round-robin load balancer
 * in front of the gateways. Gateways reach the gRPC replicas through `ipv4:` targets (client-side round robin).
 */
export async function startDistributedStack(opts: DistributedStackOptions): Promise<DistributedStack> {
  const deadline = () => Date.now() + (opts.startTimeoutMs ?? 120_000);
  const replicas = { gateway: 2, identity: 2, policy: 2, 'export-worker': 2, ...opts.replicas };
  await mkdir(opts.dataDir, { recursive: true, mode: 0o711 });
  await chmod(opts.dataDir, 0o711);
  const out = opts.onOutput ?? (() => undefined);
  const instances = new Map<string, { proc: AppProcess; healthy: () => Promise<boolean> }>();
  let pg: EmbeddedPostgresServer | undefined;
  let kafka: KafkaTestBroker | undefined;
  let redis: TestRedis | undefined;
  let s3: TestS3 | undefined;
  let lb: LoadBalancer | undefined;
  let failure: string | undefined;
  let started = false;
  const supervisor = new Supervisor<string>(opts.restartPolicy, opts.onRestart, (name, err) => out(name, `restart failed: ${err.message}`));

  const stop = async () => {
    supervisor.stop();
    await lb?.close();
    for (const app of ['gateway', 'export-worker', 'audit', 'policy', 'identity']) {
      await Promise.all([...instances.entries()].filter(([n]) => n.startsWith(`${app}-`)).map(([, i]) => i.proc.stop()));
    }
    await Promise.all([kafka?.stop(), redis?.stop(), s3?.stop()]);
    await pg?.stop();
  };

  try {
    // Made once per data directory (a reused directory keeps its database password and its keys' HMAC secret).
    const secrets = await loadStackSecrets(opts.dataDir);
    let bootstrapKey: string | undefined;
    const fixed = { postgres: 0, identity: 0, policy: 0, audit: 0, adminBase: 0, ...opts.ports };
    const fixedPorts = (port: number, n: number) => Array.from({ length: port === 0 ? 0 : n }, (_, i) => port + i);
    const adminOffset: Record<AppName, number> = { gateway: 0, identity: 1, policy: 2, audit: 3, 'export-worker': 4 };
    const taken = [
      ...fixedPorts(fixed.postgres, 1),
      ...fixedPorts(fixed.identity, replicas.identity),
      ...fixedPorts(fixed.policy, replicas.policy),
      ...fixedPorts(fixed.audit, 1),
      ...(fixed.adminBase === 0
        ? []
        : APP_NAMES.flatMap((app) => Array.from({ length: app === 'audit' ? 1 : replicas[app] }, (_, i) => fixed.adminBase + adminOffset[app] + 5 * i))),
    ];
    const clash = taken.find((p, i) => taken.indexOf(p) !== i || p > 65535);
    if (clash !== undefined) throw new Error(`port ${clash} is given twice or out of range (replica i of a service listens on its port + i)`);
    const pick = async (port: number, i = 0) => (port === 0 ? freePort() : port + i);
    // One SP key pair for all gateway replicas: an IdP pins one certificate for the service, whichever replica answers.
    const samlSp = await launcherSamlSpKeys(opts.dataDir, opts.host, opts.env);
    // PostgreSQL, the broker, Redis and the S3 store are supervised like the instances: started again on the same
    // ports (and with PostgreSQL's, the broker's and the store's data); the services reconnect by themselves.
    const pgPort = await pick(fixed.postgres);
    const startPostgres = (): Promise<EmbeddedPostgresServer> =>
      startEmbeddedPostgres({
        dataDir: path.join(opts.dataDir, 'postgres'),
        port: pgPort,
        password: secrets.postgresPassword,
        onLog: (l) => out('postgres', l),
        onUnexpectedExit: (code, signal) =>
          supervisor.crashed('postgres', { code, signal }, async () => {
            pg = await startPostgres();
          }),
      });
    [pg, kafka, redis, s3] = await Promise.all([
      startPostgres(),
      startKafka({ onUnexpectedExit: (code, signal) => supervisor.crashed('kafka', { code, signal }, () => kafka!.restart()) }),
      startTestRedis({ onUnexpectedExit: (code, signal) => supervisor.crashed('redis', { code, signal }, () => redis!.restart()) }),
      startTestS3({ onUnexpectedExit: (code, signal) => supervisor.crashed('s3', { code, signal }, () => s3!.restart()) }),
    ]);
    const databaseUrl = await pg.ensureDatabase('secsvc');
    const bucket = await s3.createBucket('secsvc-exports');
    const lbPort = opts.port === 0 ? await freePort() : opts.port;
    const origin = `http://${opts.host}:${lbPort}`;
    const ports = async (port: number, n: number) => Promise.all(Array.from({ length: n }, (_, i) => pick(port, i)));
    const grpcPorts = { identity: await ports(fixed.identity, replicas.identity), policy: await ports(fixed.policy, replicas.policy), audit: await ports(fixed.audit, 1) };
    const ipv4 = (ps: number[]) => `ipv4:${ps.map((p) => `127.0.0.1:${p}`).join(',')}`;
    const userEnv = { PATH: process.env.PATH, ...opts.env };
    const wiring = {
      profile: 'distributed' as const,
      dataDir: opts.dataDir,
      databaseUrl,
      serverSecret: secrets.serverSecret,
      issuer: origin,
      addresses: { identity: ipv4(grpcPorts.identity), policy: ipv4(grpcPorts.policy), audit: `127.0.0.1:${grpcPorts.audit[0]}` },
      samlSp: samlSpEnv(samlSp),
      distributed: { kafkaBrokers: kafka.brokers.join(','), redisUrl: redis.url, s3: s3.env(bucket) },
    };
    const admin: Record<string, string> = {};
    const gateways: string[] = [];

    const launch = async (app: AppName, index: number, ports: { grpcPort?: number; gatewayPort?: number }, healthy: () => Promise<boolean>) => {
      const name = `${app}-${index + 1}`;
      const adminPort = await pick(fixed.adminBase, adminOffset[app] + 5 * index);
      admin[name] = `http://127.0.0.1:${adminPort}`;
      const proc = supervisedApp(name, {
        rootDir: opts.rootDir,
        app,
        env: appEnvironment(app, userEnv, launcherEnvironment({ ...wiring, ...ports, adminPort, ...(app === 'gateway' && { gatewayHost: '127.0.0.1' }) })),
        supervisor,
        started: () => started,
        startupFailed: (reason) => void (failure ??= reason),
        bootstrapKey: (key) => void (bootstrapKey = key),
        out,
      });
      instances.set(name, { proc, healthy });
      proc.start();
      await waitUntil(name, healthy, deadline(), () => failure);
    };

    // Replicas of one app start one after the other (the first applies migrations and the bootstrap key).
    for (let i = 0; i < replicas.identity; i++) await launch('identity', i, { grpcPort: grpcPorts.identity[i] }, () => checkHealth(`127.0.0.1:${grpcPorts.identity[i]}`));
    for (let i = 0; i < replicas.policy; i++) await launch('policy', i, { grpcPort: grpcPorts.policy[i] }, () => checkHealth(`127.0.0.1:${grpcPorts.policy[i]}`));
    await launch('audit', 0, { grpcPort: grpcPorts.audit[0] }, () => checkHealth(`127.0.0.1:${grpcPorts.audit[0]}`));
    for (let i = 0; i < replicas['export-worker']; i++) {
      const name = `export-worker-${i + 1}`;
      await launch('export-worker', i, {}, () => httpOk(`${admin[name]}/readyz`));
    }
    for (let i = 0; i < replicas.gateway; i++) {
      const port = await freePort();
      gateways.push(`http://127.0.0.1:${port}/v1`);
      await launch('gateway', i, { gatewayPort: port }, () => httpOk(`http://127.0.0.1:${port}/readyz`));
    }
    lb = await startLoadBalancer({ host: opts.host, port: lbPort, upstreams: gateways.map((g) => g.replace(/\/v1$/, '')) });

    const dependencyHealth: Record<Dependency, () => Promise<boolean>> = {
      postgres: () => postgresAnswers(databaseUrl),
      kafka: () => kafkaAnswers(kafka!.brokers),
      redis: () => pingRedis(redis!.port),
      s3: () => fetch(s3!.endpoint, { signal: AbortSignal.timeout(1000) }).then(() => true),
    };
    const dependencyPid: Record<Dependency, () => number | undefined> = { postgres: () => pg?.pid, kafka: () => kafka?.pid, redis: () => redis?.pid, s3: () => s3?.pid };
    const isDependency = (name: string): name is Dependency => name in dependencyHealth;
    started = true;

    const instance = (name: string) => {
      const i = instances.get(name);
      if (!i) throw new Error(`no instance ${name} (have ${[...instances.keys()].join(', ')})`);
      return i;
    };
    return {
      baseUrl: `${lb.origin}/v1`,
      gateways,
      grpc: {
        identity: grpcPorts.identity.map((p) => `127.0.0.1:${p}`),
        policy: grpcPorts.policy.map((p) => `127.0.0.1:${p}`),
        audit: `127.0.0.1:${grpcPorts.audit[0]}`,
      },
      databaseUrl,
      postgresPort: pg.port,
      kafkaBrokers: kafka.brokers,
      redisUrl: redis.url,
      s3: { endpoint: s3.endpoint, env: s3.env, bucket },
      bootstrapKey,
      samlSp,
      admin,
      instances: [...instances.keys()],
      kill: (name, signal = 'SIGKILL') => instance(name).proc.stop(signal),
      start: async (name) => {
        const i = instance(name);
        i.proc.start();
        await waitUntil(name, i.healthy, deadline(), () => failure);
      },
      pid: (name) => (isDependency(name) ? dependencyPid[name]() : instance(name).proc.pid),
      healthy: (name, timeoutMs = 60_000) => waitUntil(name, isDependency(name) ? dependencyHealth[name] : instance(name).healthy, Date.now() + timeoutMs),
      instanceOfPid: (pid) => [...instances.entries()].find(([, i]) => i.proc.pid === pid)?.[0],
      stop,
    };
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  }
}
