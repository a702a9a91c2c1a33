#!/usr/bin/env node
// bench/audit: the audit pipeline's two targets (after `npm run build`).
//
//   node bench/audit.js ingest   end-to-end ingest rate: BENCH_EVENTS (default 1,000,000) events already in a
//                                producing service's outbox → relay → bus → consumer (+GeoIP) → embedded
//                                ClickHouse, once with the Postgres bus and once with Kafka (when the broker is
//                                installed), against a plain bulk insert of the same rows into ClickHouse (the
//                                ceiling), reported as a ratio.
//   node bench/audit.js chain    the cost of tamper evidence: BENCH_EVENTS (default 200,000) events stored by the
//                                consumer's store in batches of 5,000, with the hash chain (positions, hashes,
//                                head lock in PostgreSQL, checkpoints) and without, interleaved over
//                                BENCH_ROUNDS (default 3) rounds on fresh tables; events/s, CPU ms per 1,000.
//   node bench/audit.js chain-ingest  the whole pipeline (outbox → Postgres bus → consumer → ClickHouse) with
//                                the chain and without, interleaved (BENCH_ROUNDS, default 2).
//   node bench/audit.js search   BENCH_ROWS (default 10,000,000) stored entries: p50/p99 of a selective term and
//                                of a common term (page of 20 + totalHits, exactly what POST /logs/search runs),
//                                and of a newest-first GET /logs page (first page and a deep cursor).
//
// The relay, the consumer and ClickHouse share this one Node process (in production the relay runs in
// identity/policy and the consumer in audit), and the 2 cores with PostgreSQL and the Kafka broker.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const pg = require('pg');
const { events } = require('@secsvc/proto');
const { AuditChain, ChainKey, GeoIp, LOG_COLUMNS, LogStore, migrateAuditSchema, migrateClickHouse, openClickHouse, rowFromEvent, compileSearchQuery, parseSearchQuery } = require('@secsvc/audit-store');
const { createKafkaBus, createLogger, createPool, createPostgresBus, newId, OutboxRelay, outboxDdl, AUDIT_CONSUMER_GROUP } = require('@secsvc/shared');
const { kafkaUnavailable, startKafka, testDatabase, stopTestPostgres } = require('@secsvc/dev/testing');
const { machine } = require('./support');

const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const ROWS = Number(process.env.BENCH_ROWS ?? 10_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 50);
// Which buses the ingest part measures (comma-separated): postgres, kafka.
const BUSES = (process.env.BENCH_BUSES ?? 'postgres,kafka').split(',');
const logger = createLogger('bench-audit', 'warn');

const KINDS = ['user.login', 'user.logout', 'user.created', 'user.updated', 'session.created', 'api_key.created', 'policy.updated', 'auth.failed'];
const IPS = ['81.2.69.142', '8.8.8.8', '2001:4860:4860::8888', '127.0.0.1', '203.0.113.9', '1.1.1.1'];

function makeEvent(i, t0) {
  return {
    id: newId('log', t0 + Math.floor(i / 10)),
    environment: 'live',
    type: KINDS[i % KINDS.length],
    timestamp: new Date(t0 + Math.floor(i / 10)).toISOString(),
    actor: { id: `user_${i % 5000}`, email: `person${i % 5000}@example.com`, type: 'user' },
    target: { id: `ses_${i}`, type: 'session' },
    context: { ip: IPS[i % IPS.length], userAgent: 'Mozilla/5.0 (bench)' },
    result: i % 13 === 0 ? 'failure' : 'success',
    traceId: `req_${i}`,
    metadataJson: '{"authMethod":"password","mfaUsed":false}',
  };
}

async function fillOutbox(url, n) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(outboxDdl('svc'));
  const t0 = Date.now() - 3_600_000;
  const started = performance.now();
  for (let from = 0; from < n; from += 10_000) {
    const batch = Array.from({ length: Math.min(10_000, n - from) }, (_, k) => makeEvent(from + k, t0));
    await client.query(
      `INSERT INTO svc.outbox (event_id, environment, event_type, event_key, payload)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[])`,
      [batch.map((e) => e.id), batch.map((e) => e.environment), batch.map((e) => e.type), batch.map((e) => e.actor.id), batch.map((e) => JSON.stringify(events.AuthEvent.toJSON(e)))],
    );
  }
  await client.end();
  return { seconds: (performance.now() - started) / 1000, t0 };
}

async function ingestOnce(name, url, makeBus, chained = false) {
  const chDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-audit-ch-'));
  const ch = await openClickHouse({ path: chDir });
  await migrateClickHouse(ch);
  // The audit service chains every entry (tamper evidence): its head and checkpoints in PostgreSQL.
  const auditPool = chained ? createPool(url, 2, logger, 'audit') : undefined;
  if (auditPool) await migrateAuditSchema(auditPool, logger);
  const store = auditPool ? new LogStore(ch, new AuditChain(auditPool, ch, ChainKey.fromSecret('bench-chain-secret-0123456789abcdef'))) : new LogStore(ch);
  const geo = await GeoIp.open();
  const pool = createPool(url, 4, logger, 'svc');
  const bus = await makeBus();
  const relay = new OutboxRelay({ pool, databaseUrl: url, schema: 'svc', bus, logger, batchSize: 5000, pollMs: 50 });
  let stored = 0;
  const started = performance.now();
  const sub = await bus.subscribe({ topic: 'auth-events', group: AUDIT_CONSUMER_GROUP, maxBatchSize: 5000, maxWaitMs: 200 }, async (records) => {
    const rows = records.map((r) => {
      const e = events.AuthEvent.fromJSON(JSON.parse(r.value));
      return rowFromEvent(e, geo.lookup(e.context?.ip ?? ''));
    });
    stored += await store.insert(rows);
  });
  await relay.start();
  while (stored < EVENTS) await new Promise((r) => setTimeout(r, 100));
  const seconds = (performance.now() - started) / 1000;
  await relay.stop();
  await sub.stop();
  await bus.close();
  await pool.end();
  await auditPool?.end();
  const count = await store.count({ environment: 'live' });
  await ch.close();
  fs.rmSync(chDir, { recursive: true, force: true });
  return { name, seconds, rate: EVENTS / seconds, count };
}

async function ceiling(t0) {
  const chDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-audit-ceil-'));
  const ch = await openClickHouse({ path: chDir });
  await migrateClickHouse(ch);
  const geo = await GeoIp.open();
  const rows = [];
  for (let i = 0; i < EVENTS; i++) {
    const e = makeEvent(i, t0);
    const r = rowFromEvent(e, geo.lookup(e.context.ip));
    rows.push(LOG_COLUMNS.map((c) => (c === 'timestamp' ? r.timestamp.replace('T', ' ').replace('Z', '') : r[c])));
  }
  const started = performance.now();
  for (let from = 0; from < rows.length; from += 20_000) {
    await ch.insert({ table: 'audit_logs', values: rows.slice(from, from + 20_000), format: 'JSONCompactEachRow', columns: [...LOG_COLUMNS] });
  }
  const seconds = (performance.now() - started) / 1000;
  await ch.close();
  fs.rmSync(chDir, { recursive: true, force: true });
  return { seconds, rate: EVENTS / seconds };
}

async function ingest() {
  console.log(`# bench/audit ingest, ${machine()}, ${EVENTS.toLocaleString('en')} events`);
  const results = [];
  let t0;
  if (BUSES.includes('postgres')) {
    const db = await testDatabase();
    const filled = await fillOutbox(db.url, EVENTS);
    t0 = filled.t0;
    console.log(`outbox filled in ${filled.seconds.toFixed(1)} s`);
    results.push(await ingestOnce('postgres bus', db.url, () => createPostgresBus({ url: db.url, logger, pollMs: 100 })));
    await db.drop();
  }
  const missing = BUSES.includes('kafka') ? kafkaUnavailable() : 'not asked for (BENCH_BUSES)';
  if (missing) console.log(`kafka: not measured (${missing})`);
  else {
    const broker = await startKafka({ fastStart: false });
    try {
      const db = await testDatabase();
      t0 = (await fillOutbox(db.url, EVENTS)).t0;
      results.push(await ingestOnce('kafka bus', db.url, () => createKafkaBus({ brokers: broker.brokers, logger, clientId: 'bench' })));
      await db.drop();
    } finally {
      await broker.stop();
    }
  }
  await stopTestPostgres();
  const ceil = await ceiling(t0);
  console.log('\n| path | events | seconds | events/s | of the ceiling | stored |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const r of results) {
    console.log(`| outbox → ${r.name} → ClickHouse | ${EVENTS} | ${r.seconds.toFixed(1)} | ${Math.round(r.rate)} | ${(r.rate / ceil.rate).toFixed(2)} | ${r.count} |`);
  }
  console.log(`| plain bulk insert (ceiling) | ${EVENTS} | ${ceil.seconds.toFixed(1)} | ${Math.round(ceil.rate)} | 1.00 | ${EVENTS} |`);
}

/**
 * The pipeline with and without the hash chain, interleaved (BENCH_ROUNDS rounds, default 2), over the Postgres
 * bus: the outbox refilled before every run.
 */
async function chainIngest() {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
  console.log(`# bench/audit chain-ingest, ${machine()}, ${EVENTS.toLocaleString('en')} events per run, ${rounds} interleaved rounds, Postgres bus`);
  const results = { plain: [], chained: [] };
  for (let round = 0; round < rounds; round++) {
    for (const mode of round % 2 ? ['chained', 'plain'] : ['plain', 'chained']) {
      const db = await testDatabase();
      await fillOutbox(db.url, EVENTS);
      const cpu = process.cpuUsage();
      const r = await ingestOnce(mode, db.url, () => createPostgresBus({ url: db.url, logger, pollMs: 100 }), mode === 'chained');
      const used = process.cpuUsage(cpu);
      results[mode].push({ ...r, cpuMsPer1000: (used.user + used.system) / 1000 / (EVENTS / 1000) });
      await db.drop();
    }
  }
  await stopTestPostgres();
  const median = (xs) => quantile(xs, 0.5);
  console.log('\n| pipeline | events/s per round | median events/s | CPU ms per 1,000 events (relay + consumer + ClickHouse) | stored |');
  console.log('|---|---|---:|---:|---:|');
  for (const mode of ['plain', 'chained']) {
    const r = results[mode];
    console.log(`| outbox → Postgres bus → ${mode} store | ${r.map((x) => Math.round(x.rate)).join(', ')} | ${Math.round(median(r.map((x) => x.rate)))} | ${median(r.map((x) => x.cpuMsPer1000)).toFixed(1)} | ${r.map((x) => x.count).join(', ')} |`);
  }
  console.log(`\nchained / plain (medians): ${(median(results.chained.map((x) => x.rate)) / median(results.plain.map((x) => x.rate))).toFixed(2)}`);
}

async function chainCost() {
  const n = Number(process.env.BENCH_EVENTS ?? 200_000);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  console.log(`# bench/audit chain, ${machine()}, ${n.toLocaleString('en')} events per run, ${rounds} interleaved rounds`);
  const db = await testDatabase();
  const pool = createPool(db.url, 4, logger, 'audit');
  await migrateAuditSchema(pool, logger);
  const geo = await GeoIp.open();
  const key = ChainKey.fromSecret('bench-chain-secret-0123456789abcdef');
  const t0 = Date.now() - 86_400_000;
  const results = { plain: [], chained: [] };
  for (let round = 0; round < rounds; round++) {
    for (const mode of round % 2 ? ['chained', 'plain'] : ['plain', 'chained']) {
      const rows = Array.from({ length: n }, (_, i) => {
        const e = makeEvent(i + (round * 2 + (mode === 'plain' ? 0 : 1)) * n, t0);
        return rowFromEvent(e, geo.lookup(e.context.ip));
      });
      const chDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-audit-chain-'));
      const ch = await openClickHouse({ path: chDir });
      await migrateClickHouse(ch);
      await pool.query('TRUNCATE audit_chain_heads, audit_chain_checkpoints');
      const store = mode === 'chained' ? new LogStore(ch, new AuditChain(pool, ch, key)) : new LogStore(ch);
      const cpu = process.cpuUsage();
      const started = performance.now();
      for (let from = 0; from < n; from += 5000) await store.insert(rows.slice(from, from + 5000));
      const seconds = (performance.now() - started) / 1000;
      const used = process.cpuUsage(cpu);
      results[mode].push({ rate: n / seconds, cpuMsPer1000: (used.user + used.system) / 1000 / (n / 1000) });
      await ch.close();
      fs.rmSync(chDir, { recursive: true, force: true });
    }
  }
  await pool.end();
  await db.drop();
  await stopTestPostgres();
  const median = (xs) => quantile(xs, 0.5);
  const line = (mode) => {
    const r = results[mode];
    return `| ${mode} | ${r.map((x) => Math.round(x.rate)).join(', ')} | ${Math.round(median(r.map((x) => x.rate)))} | ${median(r.map((x) => x.cpuMsPer1000)).toFixed(1)} |`;
  };
  console.log('\n| store | events/s per round | median events/s | CPU ms per 1,000 events (this process) |');
  console.log('|---|---|---:|---:|');
  console.log(line('plain'));
  console.log(line('chained'));
  console.log(`\nchained / plain (medians): ${(median(results.chained.map((x) => x.rate)) / median(results.plain.map((x) => x.rate))).toFixed(2)}`);
}

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

async function search() {
  console.log(`# bench/audit search, ${machine()}, ${ROWS.toLocaleString('en')} stored entries, ${RUNS} runs each`);
  const chDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-audit-search-'));
  // ClickHouse's query condition cache would answer every repetition of a WHERE from memory: off, so each run
  // really filters (production keeps it on, which only makes repeated searches faster).
  const ch = await openClickHouse({ path: chDir }, { use_query_condition_cache: 0 });
  try {
    await migrateClickHouse(ch);
    const store = new LogStore(ch);
    // Generated server-side: 30 days of entries, 8 event kinds, 200,000 actors, one actor in 100,000 with a
    // rare email domain (the selective term).
    const started = performance.now();
    const CHUNK = 2_000_000;
    for (let from = 0; from < ROWS; from += CHUNK) {
      await ch.command({
        query: `INSERT INTO audit_logs (id, environment, timestamp, event, actor_id, actor_email, actor_type, target_id, target_type, ip, user_agent, city, country, region, lat, lng, result, trace_id, metadata)
          SELECT concat('log_', leftPad(lower(hex(number)), 26, '0')), 'live',
                 toDateTime64('2026-10-22 00:00:00', 3, 'UTC') + toIntervalMillisecond(number * intDiv(2592000000, ${ROWS})),
                 arrayElement(['user.login','user.logout','user.created','user.updated','session.created','api_key.created','policy.updated','auth.failed'], (number % 8) + 1),
                 concat('user_', toString(number % 200000)),
                 if(number % 100000 = 7, concat('needle', toString(number), '@rare-domain.example'), concat('person', toString(number % 200000), '@example.com')),
                 'user', concat('ses_', toString(number)), 'session',
                 concat(toString(81 + number % 100), '.', toString(number % 250), '.1.', toString(number % 200)), 'Mozilla/5.0 (bench)',
                 'London', 'GB', 'England', 51.5, -0.12,
                 if(number % 13 = 0, 'failure', 'success'), concat('req_', toString(number)), '{"authMethod":"password","mfaUsed":false}'
          FROM numbers(${from}, ${Math.min(CHUNK, ROWS - from)})`,
      });
    }
    console.log(`generated ${ROWS.toLocaleString('en')} rows in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    await ch.command({ query: 'OPTIMIZE TABLE audit_logs FINAL' }).catch(() => undefined);
    const filters = { environment: 'live' };
    const measure = async (name, fn) => {
      await fn();
      const times = [];
      let info = '';
      for (let i = 0; i < RUNS; i++) {
        const t = performance.now();
        info = await fn();
        times.push(performance.now() - t);
      }
      console.log(`| ${name} | ${quantile(times, 0.5).toFixed(1)} | ${quantile(times, 0.99).toFixed(1)} | ${info} |`);
    };
    const searchOf = (q) => async () => {
      const clause = compileSearchQuery(parseSearchQuery(q));
      const [rows, total] = await Promise.all([store.list(filters, 20, undefined, clause), store.count(filters, clause)]);
      return `${rows.length} shown, totalHits ${total}`;
    };
    console.log('\n| query | p50 ms | p99 ms | result |');
    console.log('|---|---:|---:|---|');
    await measure('selective term `rare`', searchOf('rare'));
    await measure('selective field `actor.email:needle7@rare-domain.example`', searchOf('actor.email:needle7@rare-domain.example'));
    await measure('common term `login` (1 in 8)', searchOf('login'));
    await measure('common term `success` (12 in 13)', searchOf('success'));
    await measure('newest-first page (GET /logs, limit 20)', async () => `${(await store.list(filters, 20)).length} rows`);
    const deep = (await store.list(filters, 100_000)).at(-1);
    await measure('page after a deep cursor (100,000 back)', async () => `${(await store.list(filters, 20, { timestamp: deep.timestamp, id: deep.id })).length} rows`);
    await measure('page filtered by events=user.login', async () => `${(await store.list({ ...filters, events: ['user.login'] }, 20)).length} rows`);
  } finally {
    await ch.close();
    fs.rmSync(chDir, { recursive: true, force: true });
  }
}

const mode = process.argv[2] ?? 'all';
(async () => {
  if (mode === 'ingest' || mode === 'all') await ingest();
  if (mode === 'search' || mode === 'all') await search();
  if (mode === 'chain' || mode === 'all') await chainCost();
  if (mode === 'chain-ingest' || mode === 'all') await chainIngest();
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
