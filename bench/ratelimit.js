#!/usr/bin/env node
// bench/ratelimit: what the rate limiter costs. One local stack (identity, policy, PostgreSQL...) and three
// gateway processes on it that differ only in RATE_LIMIT_STORE: off (no limiter), memory, and redis (a real
// redis-server started here). Every request is counted against an enterprise key with a custom limit of
// 1,000,000 per minute, so the limiter does all its work (a Lua round trip with Redis) but refuses nothing.
//   throughput: autocannon, BENCH_CONNECTIONS (50) connections, BENCH_ROUNDS (3) rounds of BENCH_DURATION (8) s
//               per gateway and case, the gateways' order rotating each round; medians of the rounds;
//   latency:    BENCH_LATENCY_REQUESTS (3000) sequential keep-alive requests per gateway and case, interleaved
//               in blocks of 50 across the gateways, timed in the client (µs);
// over two cases: GET /v1/users/{id} (gateway -> identity -> PostgreSQL) and GET /v1/bench-unknown-route
// (authenticated from the gateway's cache, then 404: the gateway alone, where the limiter's share is largest);
// then the stores alone, in this process: memory consume() per call, and Redis consume() sequential p50 and
// with 50 in flight (the gateway's client settings).
// Run after `npm run build` (needs redis-server): npm run bench:ratelimit
const http = require('node:http');
const path = require('node:path');
const { KEY, BENCH_LIMITS, load, machine, startBenchStack } = require('./support');
const { startGatewayProcess } = require('@secsvc/dev/stack');
const { startTestRedis } = require('@secsvc/dev/testing');

const duration = Number(process.env.BENCH_DURATION ?? 8);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const latencyRequests = Number(process.env.BENCH_LATENCY_REQUESTS ?? 3000);
const MODES = ['off', 'memory', 'redis'];
const gatewayDist = (m) => require(path.join(__dirname, '..', 'apps/gateway/dist', m));

/** The stores without HTTP: what one decision costs. */
async function storesAlone(redisUrl) {
  const { MemoryRateLimitStore } = gatewayDist('rate-limit/memory-store');
  const { RedisRateLimitStore } = gatewayDist('rate-limit/redis-store');
  const { createRedis, RedisHealth } = gatewayDist('redis');
  const memory = new MemoryRateLimitStore();
  const calls = 500_000;
  for (let i = 0; i < 50_000; i++) await memory.consume(`key:k${i % 1000}`, 1_000_000);
  let started = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) await memory.consume(`key:k${i % 1000}`, 1_000_000);
  const memoryNs = Number(process.hrtime.bigint() - started) / calls;

  const silent = { warn() {}, info() {} };
  const client = createRedis(redisUrl, new RedisHealth(silent), 1000);
  await new Promise((r) => client.once('ready', r));
  const store = new RedisRateLimitStore(client);
  const samples = [];
  for (let i = 0; i < 1000; i++) await store.consume(`key:k${i % 100}`, 1_000_000); // warm-up
  for (let i = 0; i < 5000; i++) {
    const t = process.hrtime.bigint();
    await store.consume(`key:k${i % 100}`, 1_000_000);
    samples.push(Number(process.hrtime.bigint() - t) / 1000);
  }
  const total = 100_000;
  let next = 0;
  started = process.hrtime.bigint();
  await Promise.all(Array.from({ length: 50 }, async () => {
    while (next++ < total) await store.consume(`key:k${next % 100}`, 1_000_000);
  }));
  const perSecond = total / (Number(process.hrtime.bigint() - started) / 1e9);
  client.disconnect();
  return { memoryNs, redisP50: median(samples), redisPerSecond: perSecond };
}

async function startGateway(stack, env) {
  const gateway = await startGatewayProcess({
    rootDir: path.resolve(__dirname, '..'),
    stack,
    env: { LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn', ...BENCH_LIMITS, ...env },
    output: 'inherit',
  });
  return { origin: gateway.baseUrl.replace(/\/v1$/, ''), stop: gateway.stop };
}

/** One GET over a keep-alive agent; resolves with the elapsed µs. */
function timedGet(agent, url, headers) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    http
      .get(url, { agent, headers }, (res) => {
        res.resume();
        res.on('end', () => resolve(Number(process.hrtime.bigint() - started) / 1000));
      })
      .on('error', reject);
  });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

async function main() {
  const redis = await startTestRedis();
  const { stack, stop } = await startBenchStack();
  const gateways = {};
  try {
    gateways.off = await startGateway(stack, { RATE_LIMIT_STORE: 'off' });
    gateways.memory = await startGateway(stack, { RATE_LIMIT_STORE: 'memory' });
    gateways.redis = await startGateway(stack, { RATE_LIMIT_STORE: 'redis', REDIS_URL: redis.url });
    const json = (method, p, body) =>
      fetch(`${stack.baseUrl}${p}`, {
        method,
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then((r) => r.json());
    const benchKey = (await json('POST', '/api-keys', { name: 'bench', type: 'secret', plan: 'enterprise', rateLimit: 1_000_000 })).data.key;
    const user = (await json('POST', '/users', { email: 'bench.ratelimit@example.com', name: 'Bench' })).data;
    const headers = { authorization: `Bearer ${benchKey}` };
    const cases = [
      ['GET /v1/users/{id}', `/v1/users/${user.id}`],
      ['GET /v1/bench-unknown-route (404, gateway only)', '/v1/bench-unknown-route'],
    ];
    for (const mode of MODES) await load({ url: `${gateways[mode].origin}/v1/users/${user.id}`, connections, duration: 3, headers }); // warm-up

    // Rounds with the order rotating, so drift and the neighbours' load fall on every gateway alike.
    const throughput = [];
    for (const [name, p] of cases) {
      const runs = Object.fromEntries(MODES.map((m) => [m, []]));
      for (let round = 0; round < rounds; round++) {
        for (let i = 0; i < MODES.length; i++) {
          const mode = MODES[(i + round) % MODES.length];
          runs[mode].push(await load({ url: `${gateways[mode].origin}${p}`, connections, duration, headers }));
        }
      }
      for (const mode of MODES) {
        const rs = runs[mode];
        throughput.push({
          name,
          mode,
          rps: median(rs.map((r) => r.requests.average)),
          all: rs.map((r) => Math.round(r.requests.average)).join(' / '),
          p50: median(rs.map((r) => r.latency.p50)),
          p99: median(rs.map((r) => r.latency.p99)),
          non2xx: rs.reduce((n, r) => n + r.non2xx, 0),
          errors: rs.reduce((n, r) => n + r.errors, 0),
        });
      }
    }

    const latency = [];
    for (const [name, p] of cases) {
      const agents = Object.fromEntries(MODES.map((m) => [m, new http.Agent({ keepAlive: true, maxSockets: 1 })]));
      const samples = Object.fromEntries(MODES.map((m) => [m, []]));
      for (let done = 0; done < latencyRequests; done += 50) {
        for (const mode of MODES) {
          for (let i = 0; i < 50; i++) samples[mode].push(await timedGet(agents[mode], `${gateways[mode].origin}${p}`, headers));
        }
      }
      for (const mode of MODES) {
        agents[mode].destroy();
        latency.push({ name, mode, p50: median(samples[mode]) });
      }
    }

    const alone = await storesAlone(redis.url);
    const base = (list, name) => list.find((r) => r.name === name && r.mode === 'off');
    const lines = [
      `### ${machine()}`,
      '',
      `\`npm run bench:ratelimit\` (one stack, three gateways; autocannon ${connections} connections, ${rounds} rounds of ${duration} s per gateway and case; ${latencyRequests} sequential requests per gateway and case for latency)`,
      '',
      '| case | limiter | req/s (median of rounds) | rounds | vs off | p50 ms | p99 ms | non-2xx | errors |',
      '|---|---|---:|---|---:|---:|---:|---:|---:|',
      ...throughput.map(
        (r) =>
          `| ${r.name} | ${r.mode} | ${Math.round(r.rps)} | ${r.all} | ${((100 * r.rps) / base(throughput, r.name).rps).toFixed(1)} % | ${r.p50} | ${r.p99} | ${r.non2xx} | ${r.errors} |`,
      ),
      '',
      '| case | limiter | sequential p50 µs | added vs off µs |',
      '|---|---|---:|---:|',
      ...latency.map((r) => `| ${r.name} | ${r.mode} | ${Math.round(r.p50)} | ${Math.round(r.p50 - base(latency, r.name).p50)} |`),
      '',
      `Stores alone (this process): memory ${(alone.memoryNs / 1000).toFixed(2)} µs per decision; Redis ${Math.round(alone.redisP50)} µs p50 sequential, ${Math.round(alone.redisPerSecond)} decisions/s with 50 in flight.`,
    ];
    console.log(lines.join('\n'));
  } finally {
    for (const g of Object.values(gateways)) await g.stop();
    await stop();
    await redis.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
