// Shared by the benchmarks: the whole local stack on free ports in a temporary data directory.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const autocannon = require('autocannon');
const { startLocalStack } = require('@secsvc/dev/stack');

const KEY = 'svc_sk_' + 'benchmarkKey'.repeat(4);
/**
 * The load of one benchmark (thousands of requests per second with one key or one user) is far above any
 * plan's limit: the rate limiter stays on and counts every request, but the bootstrap key (enterprise, no
 * custom limit) and users get 1,000,000 requests per minute so nothing is refused.
 */
const BENCH_LIMITS = { RATE_LIMIT_ENTERPRISE_PER_MINUTE: '1000000', RATE_LIMIT_USER_PER_MINUTE: '1000000' };

async function startBenchStack(env = {}, nodeArgs) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'secsvc-bench-'));
  fs.chmodSync(tmp, 0o711);
  const stack = await startLocalStack({
    rootDir: path.resolve(__dirname, '..'),
    dataDir: path.join(tmp, 'data'),
    host: '127.0.0.1',
    port: 0,
    ports: { postgres: 0, identity: 0, policy: 0, audit: 0, admin: { gateway: 0, identity: 0, policy: 0, audit: 0, 'export-worker': 0 } },
    env: { LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn', BOOTSTRAP_API_KEY: KEY, ...BENCH_LIMITS, ...env },
    nodeArgs,
  });
  return {
    stack,
    async stop() {
      await stack.stop();
      fs.rmSync(tmp, { recursive: true, force: true });
    },
  };
}

/** One autocannon run, resolved with its result. */
function load(opts) {
  return new Promise((resolve, reject) => autocannon(opts, (err, res) => (err ? reject(err) : resolve(res))));
}

function machine() {
  return `${new Date().toISOString().slice(0, 10)}: ${os.cpus().length} × ${os.cpus()[0].model}, Node ${process.version}`;
}

module.exports = { KEY, BENCH_LIMITS, startBenchStack, load, machine };
