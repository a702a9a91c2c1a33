#!/usr/bin/env node
// `npm start`: the whole service on one machine (local profile). Run after `nx run-many -t build`.
const path = require('node:path');
const { URL } = require('node:url');
const { loadConfig, env, ConfigError } = require('@secsvc/shared');
const { describeRestart, startLocalStack } = require('@secsvc/dev/stack');
const { z } = require('zod');
const stopOnSignal = require('./stop-on-signal');

const rootDir = path.resolve(__dirname, '..');
let config;
try {
  config = loadConfig({
    HOST: env.host('127.0.0.1'),
    PORT: env.port(8080),
    DATA_DIR: z.string().min(1).default(path.join(rootDir, '.data')),
    PG_PORT: env.port(54329),
    IDENTITY_GRPC_PORT: env.port(50051),
    POLICY_GRPC_PORT: env.port(50052),
    AUDIT_GRPC_PORT: env.port(50053),
    ADMIN_PORT_BASE: env.port(9100),
    LOG_LEVEL: env.logLevel(),
  });
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(1);
  }
  throw err;
}

const base = config.ADMIN_PORT_BASE;
const adminPort = (offset) => (base === 0 ? 0 : base + offset);

async function main() {
  const stack = await startLocalStack({
    rootDir,
    dataDir: path.resolve(config.DATA_DIR),
    host: config.HOST,
    port: config.PORT,
    ports: {
      postgres: config.PG_PORT,
      identity: config.IDENTITY_GRPC_PORT,
      policy: config.POLICY_GRPC_PORT,
      audit: config.AUDIT_GRPC_PORT,
      admin: { gateway: adminPort(0), identity: adminPort(1), policy: adminPort(2), audit: adminPort(3), 'export-worker': adminPort(4) },
    },
    // Every app gets the variables its config reads from this environment (appEnvironment), except what the
    // launcher wires itself: PROFILE, ports, hosts, DATABASE_URL, service addresses.
    env: process.env,
    onOutput: (app, line) => {
      if (app !== 'postgres') process.stdout.write(line + '\n');
    },
    // A child that dies is started again (backoff with jitter); the rest keeps running. A crash loop is loud.
    onRestart: (app, exit, decision) => console.error(describeRestart(app, exit, decision)),
  });
  const lines = [
    '',
    `Security service is running: ${stack.baseUrl}`,
    `  gRPC: identity ${stack.grpc.identity}, policy ${stack.grpc.policy}, audit ${stack.grpc.audit}`,
    `  admin: ${Object.entries(stack.admin).map(([app, url]) => `${app} ${new URL(url).port}`).join(', ')}; PostgreSQL port ${new URL(stack.databaseUrl).port}`,
    `  data: ${path.resolve(config.DATA_DIR)}`,
  ];
  if (stack.samlSp) {
    const { keyFile, certFile, created } = stack.samlSp;
    lines.push(`  SAML SP key pair${created ? ' (generated now)' : ''}: ${keyFile}, ${certFile}`);
  }
  if (stack.bootstrapKey) {
    lines.push(
      '',
      'Bootstrap admin API key (shown once; it is stored only as a hash):',
      `  ${stack.bootstrapKey}`,
      '',
      `Try: curl -H "Authorization: Bearer ${stack.bootstrapKey}" ${stack.baseUrl}/users`,
    );
  }
  console.log(lines.join('\n') + '\n');
  stopOnSignal(() => stack.stop());
}

main().catch((err) => {
  console.error(`start failed: ${err.message}`);
  process.exit(1);
});
