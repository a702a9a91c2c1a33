#!/usr/bin/env node
// bench/users: GET /v1/users/{id} through the full local stack (gateway -> gRPC -> Postgres) and GET /healthz
// (the gateway's ceiling), each with autocannon at 50 connections for 20 s. Run after `npm run build`:
//   npm run bench:users            (BENCH_DURATION=5 for a quick look)
// Prints a Markdown block to paste into bench/RESULTS.md.
const { KEY, load, machine, startBenchStack } = require('./support');

const duration = Number(process.env.BENCH_DURATION ?? 20);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const run = (title, url) => load({ title, url, connections, duration, headers: { authorization: `Bearer ${KEY}` } });

async function main() {
  const { stack, stop } = await startBenchStack(
    { AUTH_CACHE_TTL_MS: process.env.AUTH_CACHE_TTL_MS },
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
      const r = await run(name, url);
      results.push({ name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors });
    }
    const lines = [
      `### ${machine()}`,
      '',
      `\`npm run bench:users\` (autocannon, ${connections} connections, ${duration} s each, LOG_LEVEL=${process.env.LOG_LEVEL ?? 'warn'}, AUTH_CACHE_TTL_MS=${process.env.AUTH_CACHE_TTL_MS ?? 'default'})`,
      '',
      '| endpoint | req/s (mean) | p50 ms | p99 ms | non-2xx | errors |',
      '|---|---:|---:|---:|---:|---:|',
      ...results.map((r) => `| ${r.name} | ${Math.round(r.rps)} | ${r.p50} | ${r.p99} | ${r.non2xx} | ${r.errors} |`),
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
