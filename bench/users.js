#!/usr/bin/env node
// bench/users: GET /v1/users/{id} through the full local stack (gateway -> gRPC -> Postgres) and GET /healthz
// (the gateway's ceiling), each with autocannon at 50 connections for 20 s. Run after `npm run build`:
//   npm run bench:users            (BENCH_DURATION=5 for a quick look; GATEWAY_WORKERS=2 for a gateway cluster,
//                                   default 1 as the launcher's)
// Prints a Markdown block to paste into bench/RESULTS.md.
const os = require('node:os');
const { KEY, cpuMs, load, machine, startBenchStack } = require('./support');

const duration = Number(process.env.BENCH_DURATION ?? 20);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const run = (title, url) => load({ title, url, connections, duration, headers: { authorization: `Bearer ${KEY}` } });

async function main() {
  const { stack, stop } = await startBenchStack(
    { AUTH_CACHE_TTL_MS: process.env.AUTH_CACHE_TTL_MS, GATEWAY_WORKERS: process.env.GATEWAY_WORKERS },
    process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(' ') : undefined,
  );
  try {
    const created = await fetch(`${stack.baseUrl}/users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'bench@example.com', name: 'Bench', roles: ['role_member'], metadata: { team: 'perf' } }),
    }).then((r) => r.json());
    const id = created.data.id;
    const origin = stack.baseUrl.replace(/\/v1$/, '');
    // warm-up: JIT, connection pools
    await load({ url: `${stack.baseUrl}/users/${id}`, connections, duration: 3, headers: { authorization: `Bearer ${KEY}` } });
    const results = [];
    for (const [name, url] of [
      ['GET /healthz (gateway ceiling)', `${origin}/healthz`],
      ['GET /v1/users/{id} (gateway -> gRPC -> Postgres)', `${stack.baseUrl}/users/${id}`],
    ]) {
      // CPU per request from /proc (the stable figure on a busy machine): the gateway with its cluster workers, identity.
      const pids = { gateway: stack.pid('gateway'), identity: stack.pid('identity') };
      const before = cpuMs(pids);
      const r = await run(name, url);
      const after = cpuMs(pids);
      const perRequest = (app) => ((after[app] - before[app]) / r.requests.total).toFixed(2);
      results.push({ name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors, cpu: `${perRequest('gateway')} / ${perRequest('identity')}` });
    }
    const lines = [
      `### ${machine()}`,
      '',
      `\`npm run bench:users\` (autocannon, ${connections} connections, ${duration} s each, LOG_LEVEL=${process.env.LOG_LEVEL ?? 'warn'}, AUTH_CACHE_TTL_MS=${process.env.AUTH_CACHE_TTL_MS ?? 'default'}, GATEWAY_WORKERS=${process.env.GATEWAY_WORKERS ?? 1}, load average ${os.loadavg()[0].toFixed(1)})`,
      '',
      '| endpoint | req/s (mean) | p50 ms | p99 ms | non-2xx | errors | CPU ms/request: gateway / identity |',
      '|---|---:|---:|---:|---:|---:|---:|',
      ...results.map((r) => `| ${r.name} | ${Math.round(r.rps)} | ${r.p50} | ${r.p99} | ${r.non2xx} | ${r.errors} | ${r.cpu} |`),
      '',
      `Ratio users/healthz: ${(results[1].rps / results[0].rps).toFixed(2)}`,
    ];
    console.log(lines.join('\n'));
  } finally {
    await stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
