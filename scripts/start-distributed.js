#!/usr/bin/env node
// `npm run start:distributed`: the distributed profile on one machine (after `nx run-many -t build` and
// `bash scripts/install-tools.sh`): Kafka, redis-server, versitygw (S3), PostgreSQL, two replicas of gateway,
// identity, policy and export-worker behind a load balancer, and one audit service (embedded ClickHouse: no
// ClickHouse server can be installed here). Everything listens on 127.0.0.1; data lives in a temp directory.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { loadConfig, env, ConfigError } = require('@secsvc/shared');
const { startDistributedStack } = require('@secsvc/shared/stack');
const { z } = require('zod');
const stopOnSignal = require('./stop-on-signal');

let config;
try {
  config = loadConfig({
    PORT: env.port(8080),
    LOG_LEVEL: env.logLevel(),
    BOOTSTRAP_API_KEY: z.string().optional(),
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
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'secsvc-distributed-'));
  fs.chmodSync(tmp, 0o711);
  const n = config.REPLICAS;
  const stack = await startDistributedStack({
    rootDir: path.resolve(__dirname, '..'),
    dataDir: path.join(tmp, 'data'),
    host: '127.0.0.1',
    port: config.PORT,
    replicas: { gateway: n, identity: n, policy: n, 'export-worker': n },
    env: { LOG_LEVEL: config.LOG_LEVEL, BOOTSTRAP_API_KEY: config.BOOTSTRAP_API_KEY },
    onOutput: (instance, line) => {
      if (instance !== 'postgres') process.stdout.write(`[${instance}] ${line}\n`);
    },
  });
  console.log(
    [
      '',
      `Security service (distributed profile) is running behind ${stack.baseUrl}`,
      `  gateways: ${stack.gateways.join(', ')}`,
      `  Kafka ${stack.kafkaBrokers.join(',')}, Redis ${stack.redisUrl}, S3 ${stack.s3.endpoint} (bucket ${stack.s3.bucket})`,
      `  instances: ${stack.instances.join(', ')}`,
      ...(stack.samlSp ? [`  SAML SP key pair (every gateway): ${stack.samlSp.keyFile}, ${stack.samlSp.certFile}`] : []),
      '',
      `Admin API key: ${stack.bootstrapKey}`,
      `Try: curl -H "Authorization: Bearer ${stack.bootstrapKey}" ${stack.baseUrl}/users`,
      '',
    ].join('\n'),
  );
  stopOnSignal(async () => {
    await stack.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  });
}

main().catch((err) => {
  console.error(`start failed: ${err.message}`);
  process.exit(1);
});
