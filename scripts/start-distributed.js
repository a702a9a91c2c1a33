#!/usr/bin/env node
// `npm run start:distributed`: the distributed profile on one machine (after `nx run-many -t build` and
// `bash scripts/install-tools.sh`): Kafka, redis-server, versitygw (S3), PostgreSQL, two replicas of gateway,
// identity, policy and export-worker behind a load balancer, and one audit service (embedded ClickHouse unless
// CLICKHOUSE_URL names a server). Everything listens on 127.0.0.1 (the load balancer on HOST); data lives in
// DATA_DIR (default .data/distributed) and is kept across restarts; DATA_TEMPORARY=true uses a temporary
// directory deleted on stop instead.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { URL } = require('node:url');
const { loadConfig, env, ConfigError } = require('@secsvc/shared');
const { describeRestart, startDistributedStack } = require('@secsvc/dev/stack');
const { z } = require('zod');
const stopOnSignal = require('./stop-on-signal');

let config;
try {
  config = loadConfig({
    HOST: env.host('127.0.0.1'),
    PORT: env.port(8080),
    DATA_DIR: z.string().min(1).default(path.resolve(__dirname, '..', '.data', 'distributed')),
    DATA_TEMPORARY: env.bool(false),
    // 0: any free port (the default here: replica i of a service listens on its port + i).
    PG_PORT: env.port(0),
    IDENTITY_GRPC_PORT: env.port(0),
    POLICY_GRPC_PORT: env.port(0),
    AUDIT_GRPC_PORT: env.port(0),
    ADMIN_PORT_BASE: env.port(0),
    LOG_LEVEL: env.logLevel(),
    REPLICAS: env.int(2, 1, 8),
  });
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(1);
  }
  throw err;
}

async function main() {
  // DATA_DIR is kept (a restart finds its users, keys and log again); DATA_TEMPORARY=true asks for a throw-away one.
  let tmp;
  let dataDir;
  if (!config.DATA_TEMPORARY) {
    dataDir = path.resolve(config.DATA_DIR);
  } else {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'secsvc-distributed-'));
    fs.chmodSync(tmp, 0o711);
    dataDir = path.join(tmp, 'data');
  }
  const removeTmp = () => {
    if (!tmp) return;
    fs.rmSync(tmp, { recursive: true, force: true });
    console.log(`deleted the temporary data directory ${tmp}`);
  };
  const n = config.REPLICAS;
  const stack = await startDistributedStack({
    rootDir: path.resolve(__dirname, '..'),
    dataDir,
    host: config.HOST,
    port: config.PORT,
    replicas: { gateway: n, identity: n, policy: n, 'export-worker': n },
    ports: {
      postgres: config.PG_PORT,
      identity: config.IDENTITY_GRPC_PORT,
      policy: config.POLICY_GRPC_PORT,
      audit: config.AUDIT_GRPC_PORT,
      adminBase: config.ADMIN_PORT_BASE,
    },
    // Every app gets the variables its config reads from this environment (appEnvironment), except what the
    // launcher wires itself: PROFILE, ports, hosts, DATABASE_URL, addresses, Kafka, Redis, the S3 store.
    env: process.env,
    onOutput: (instance, line) => {
      if (instance !== 'postgres') process.stdout.write(`[${instance}] ${line}\n`);
    },
    // An instance, PostgreSQL, the broker or Redis that dies is started again (backoff with jitter).
    onRestart: (name, exit, decision) => console.error(describeRestart(name, exit, decision)),
  }).catch((err) => {
    removeTmp();
    throw err;
  });
  const port = (url) => new URL(url).port;
  const key = stack.bootstrapKey
    ? [`Admin API key (generated now, shown once; it is stored only as a hash): ${stack.bootstrapKey}`, `Try: curl -H "Authorization: Bearer ${stack.bootstrapKey}" ${stack.baseUrl}/users`]
    : process.env.BOOTSTRAP_API_KEY
      ? ['Admin API key: your BOOTSTRAP_API_KEY (created when the data directory had no key yet)']
      : [`Admin API key: the one printed when ${dataDir} was first used (keys are stored only as hashes)`];
  console.log(
    [
      '',
      `Security service (distributed profile) is running behind ${stack.baseUrl}`,
      `  gateways: ${stack.gateways.join(', ')}`,
      `  gRPC: identity ${stack.grpc.identity.join(', ')}; policy ${stack.grpc.policy.join(', ')}; audit ${stack.grpc.audit}`,
      `  admin: ${Object.entries(stack.admin).map(([name, url]) => `${name} ${port(url)}`).join(', ')}`,
      `  PostgreSQL port ${stack.postgresPort}, Kafka ${stack.kafkaBrokers.join(',')}, Redis ${stack.redisUrl}, S3 ${stack.s3.endpoint} (bucket ${stack.s3.bucket})`,
      `  data: ${dataDir}${tmp ? ' (temporary: deleted on stop)' : ' (kept across restarts; DATA_TEMPORARY=true for a throw-away one)'}`,
      ...(stack.samlSp ? [`  SAML SP key pair (every gateway): ${stack.samlSp.keyFile}, ${stack.samlSp.certFile}`] : []),
      '',
      ...key,
      '',
    ].join('\n'),
  );
  stopOnSignal(async () => {
    await stack.stop();
    removeTmp();
  });
}

main().catch((err) => {
  console.error(`start failed: ${err.message}`);
  process.exit(1);
});
