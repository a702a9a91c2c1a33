#!/usr/bin/env node
// bench/distributed: the distributed profile on this machine (Kafka, Redis, S3, Postgres; see
// `npm run start:distributed`) with one versus two replicas of each stateless app, in one run:
//   - GET /v1/users/{id} through the load balancer (autocannon, 50 connections, BENCH_DURATION s);
//   - event ingest: BENCH_EVENTS events written straight into identity's outbox, until the audit log counts
//     them all (relay → Kafka → consumer → ClickHouse).
// Run after `npm run build` and `bash scripts/install-tools.sh`. Prints a Markdown block for bench/RESULTS.md.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const pg = require('pg');
const { events } = require('@secsvc/proto');
const { newId } = require('@secsvc/shared');
const { startDistributedStack } = require('@secsvc/dev/stack');
const { BENCH_LIMITS, KEY, load, machine } = require('./support');

const duration = Number(process.env.BENCH_DURATION ?? 20);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 100_000);
const connections = 50;

async function measure(replicas) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'secsvc-bench-dist-'));
  fs.chmodSync(tmp, 0o711);
  const stack = await startDistributedStack({
    rootDir: path.resolve(__dirname, '..'),
    dataDir: path.join(tmp, 'data'),
    host: '127.0.0.1',
    port: 0,
    replicas: { gateway: replicas, identity: replicas, policy: replicas, 'export-worker': replicas },
    env: { LOG_LEVEL: 'warn', BOOTSTRAP_API_KEY: KEY, ...BENCH_LIMITS },
  });
  const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
  try {
    const user = (await fetch(`${stack.baseUrl}/users`, { method: 'POST', headers, body: JSON.stringify({ email: 'bench@example.com', name: 'Bench' }) }).then((r) => r.json())).data;
    const url = `${stack.baseUrl}/users/${user.id}`;
    await load({ url, connections, duration: 3, headers });
    const r = await load({ url, connections, duration, headers });

    // Ingest: events appended to identity's outbox in bulk (as if written by many requests), timed until the
    // audit log has them all.
    const client = new pg.Client({ connectionString: stack.databaseUrl });
    await client.connect();
    const t0 = Date.now();
    const rows = Array.from({ length: EVENTS }, (_, i) => {
      const e = {
        id: newId('log'),
        environment: 'live',
        type: 'bench.ingested',
        timestamp: new Date(t0 + i).toISOString(),
        actor: { id: `user_${i % 1000}`, type: 'user' },
        context: { ip: '81.2.69.142', userAgent: 'bench' },
        result: 'success',
        traceId: `req_${i}`,
        metadataJson: '{}',
      };
      return e;
    });
    const started = performance.now();
    for (let from = 0; from < rows.length; from += 10_000) {
      const b = rows.slice(from, from + 10_000);
      await client.query(
        `INSERT INTO identity.outbox (event_id, environment, event_type, event_key, payload)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[])`,
        [b.map((e) => e.id), b.map(() => 'live'), b.map((e) => e.type), b.map((e) => e.actor.id), b.map((e) => JSON.stringify(events.AuthEvent.toJSON(e)))],
      );
    }
    await client.end();
    let total = 0;
    while (total < EVENTS) {
      await new Promise((res) => setTimeout(res, 250));
      const s = await fetch(`${stack.baseUrl}/logs/search`, { method: 'POST', headers, body: JSON.stringify({ query: 'event:bench.ingested', limit: 1 }) }).then((x) => x.json());
      total = s.meta?.totalHits ?? 0;
    }
    const ingestSeconds = (performance.now() - started) / 1000;
    return { replicas, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, ingest: EVENTS / ingestSeconds };
  } finally {
    await stack.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

async function main() {
  const one = await measure(1);
  const two = await measure(2);
  console.log(
    [
      `### ${machine()}`,
      '',
      `\`node bench/distributed.js\` (autocannon ${connections} connections, ${duration} s; ${EVENTS.toLocaleString('en')} events ingested)`,
      '',
      '| replicas | GET /users/{id} req/s | p50 ms | p99 ms | non-2xx | ingest events/s |',
      '|---:|---:|---:|---:|---:|---:|',
      ...[one, two].map((m) => `| ${m.replicas} | ${Math.round(m.rps)} | ${m.p50} | ${m.p99} | ${m.non2xx} | ${Math.round(m.ingest)} |`),
      '',
      `Scaling ratio (two / one): GET /users/{id} ${(two.rps / one.rps).toFixed(2)}, ingest ${(two.ingest / one.ingest).toFixed(2)}`,
    ].join('\n'),
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
