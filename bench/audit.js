#!/usr/bin/env node
// bench/audit: the audit pipeline's two targets (after `npm run build`).
//
//   node bench/audit.js ingest   end-to-end ingest rate: BENCH_EVENTS (default 1,000,000) events already in a
//                                producing service's outbox → relay → bus → consumer (+GeoIP) → embedded
//                                ClickHouse, once with the Postgres bus and once with Kafka (when the broker is
//                                installed), against a plain bulk insert of the same rows into ClickHouse (the
//                                ceiling), reported as a ratio. BENCH_BATCH: the consumer's batch (default 20,000, as
//                                AUDIT_BATCH_SIZE); BENCH_BUSES: postgres,kafka; BENCH_KAFKA_COMPRESSION: the
//                                codecs the Kafka path runs with, one run each (default lz4,none). CPU per
//                                process: consumer + chdb, relay, PostgreSQL (every backend), Kafka broker; and
//                                the bytes each event takes in the broker's log.
//   node bench/audit.js chain    the cost of tamper evidence: BENCH_EVENTS (default 200,000) events stored by the
//                                consumer's store in batches of 5,000, with the hash chain (positions, hashes,
//                                head lock in PostgreSQL, checkpoints) and without, interleaved over
//                                BENCH_ROUNDS (default 3) rounds on fresh tables; events/s, CPU ms per 1,000.
//   node bench/audit.js chain-ingest  the whole pipeline (outbox → Postgres bus → consumer → ClickHouse) with
//                                the chain and without, interleaved (BENCH_ROUNDS, default 2).
//   node bench/audit.js search   BENCH_ROWS (default 10,000,000) stored entries: p50/p99 of selective and common
//                                searches (page of 20 with highlights + totalHits, exactly what POST /logs/search
//                                runs) and of GET /logs pages (first page, a deep cursor, an events filter), on
//                                the quiet table and with an ingest stream running (merges), then 50 concurrent
//                                searches' throughput (see search() below for the knobs).
//
// The relay, the consumer and ClickHouse share this one Node process (in production the relay runs in
// identity/policy and the consumer in audit), and the 2 cores with PostgreSQL and the Kafka broker.
const { fork } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const { setTimeout: sleep } = require('node:timers/promises');
const pg = require('pg');
const { events } = require('@secsvc/proto');
const { AuditChain, ChainKey, cursorAfter, EventRecords, GeoIp, LOG_COLUMNS, LogQueries, LogStore, MIGRATIONS, migrateAuditSchema, migrateClickHouse, openClickHouse, rowFromEvent } = require('@secsvc/audit-store');
const { createKafkaBus, createLogger, createPool, createPostgresBus, encodeCursor, newId, OutboxRelay, outboxDdl, AUDIT_CONSUMER_GROUP } = require('@secsvc/shared');
const { kafkaUnavailable, startKafka, testDatabase, stopTestPostgres } = require('@secsvc/dev/testing');
const { cpuMs, machine, processTable } = require('./support');

const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const ROWS = Number(process.env.BENCH_ROWS ?? 10_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 50);
// The consumer's batch (the audit service's AUDIT_BATCH_SIZE, 20,000 by default).
const CONSUMER_BATCH = Number(process.env.BENCH_BATCH ?? 20000);
// Which buses the ingest part measures (comma-separated): postgres, kafka.
const BUSES = (process.env.BENCH_BUSES ?? 'postgres,kafka').split(',');
// The Kafka path's codecs (KAFKA_COMPRESSION), one run each.
const KAFKA_CODECS = (process.env.BENCH_KAFKA_COMPRESSION ?? 'lz4,none').split(',');
// Ingest as production runs it: every entry chained, the relay in a process of its own (BENCH_CHAINED=0 and
// BENCH_RELAY=same for the earlier single-process, unchained form).
const INGEST_OPTIONS = { chained: process.env.BENCH_CHAINED !== '0', separateRelay: process.env.BENCH_RELAY !== 'same' };
const logger = createLogger('bench-audit', 'warn');
const SEARCH_SECRET = 'bench-search-secret-0123456789abcdef';

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

/** The bus of a spec: { kind: 'postgres' } on the run's database, or { kind: 'kafka', brokers, compression }. */
function makeBus(spec, url) {
  return spec.kind === 'kafka'
    ? createKafkaBus({ brokers: spec.brokers, logger, clientId: 'bench', compression: spec.compression })
    : createPostgresBus({ url, logger, pollMs: 100 });
}

/**
 * Child mode (`node bench/audit.js relay <url> <bus spec JSON>`): the outbox relay alone, as a producing service
 * runs it, until the parent says stop; then reports its CPU time.
 */
async function relayChild(url, spec) {
  const pool = createPool(url, 4, logger, 'svc');
  const bus = await makeBus(spec, url);
  const relay = new OutboxRelay({ pool, databaseUrl: url, schema: 'svc', bus, logger, pollMs: 50 });
  const cpu0 = process.cpuUsage();
  await relay.start();
  process.send({ started: true });
  await new Promise((resolve) => process.once('message', resolve));
  await relay.stop();
  const used = process.cpuUsage(cpu0);
  await bus.close();
  await pool.end();
  process.send({ cpuMs: (used.user + used.system) / 1000 });
  process.disconnect();
}

/**
 * One ingest run: the outbox relayed to the bus (in this process, or with `separateRelay` in a child process, as
 * production runs it in the producing services) and consumed into ClickHouse, chained when `chained` (as the audit
 * service stores every entry). CPU ms per 1,000 events of this process (consumer + chdb) and of the relay's.
 */
async function ingestOnce(name, url, spec, { chained = false, separateRelay = false } = {}, others = {}) {
  const chDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-audit-ch-'));
  const ch = await openClickHouse({ path: chDir });
  await migrateClickHouse(ch);
  // The audit service chains every entry (tamper evidence): its head and checkpoints in PostgreSQL.
  const auditPool = chained ? createPool(url, 2, logger, 'audit') : undefined;
  if (auditPool) await migrateAuditSchema(auditPool, logger);
  const store = auditPool ? new LogStore(ch, new AuditChain(auditPool, ch, ChainKey.fromSecret('bench-chain-secret-0123456789abcdef'))) : new LogStore(ch);
  const geo = await GeoIp.open();
  const pool = separateRelay ? undefined : createPool(url, 4, logger, 'svc');
  const bus = await makeBus(spec, url);
  const relay = pool ? new OutboxRelay({ pool, databaseUrl: url, schema: 'svc', bus, logger, pollMs: 50 }) : undefined;
  let stored = 0;
  const cpu0 = process.cpuUsage();
  const others0 = cpuMs(others);
  const started = performance.now();
  console.log(`${name}: ingest started`);
  // As the audit service's consumer (apps/audit/src/consumer.ts) takes them.
  const parsed = new EventRecords(geo);
  const sub = await bus.subscribe({ topic: 'auth-events', group: AUDIT_CONSUMER_GROUP, maxBatchSize: CONSUMER_BATCH, maxWaitMs: 200, onReceived: parsed.prepare }, async (records) => {
    stored += await store.insertEntries(parsed.entries(records, (bad) => console.error('malformed record', bad.reason)));
  });
  let child;
  if (relay) await relay.start();
  else {
    child = fork(__filename, ['relay', url, JSON.stringify(spec)], { stdio: 'inherit' });
    await new Promise((resolve, reject) => {
      child.once('message', resolve);
      child.once('exit', (code) => reject(new Error(`relay process exited (${code})`)));
    });
  }
  while (stored < EVENTS) await sleep(100);
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu0);
  const others1 = cpuMs(others);
  let relayCpuMs;
  if (child) {
    const report = new Promise((resolve) => child.on('message', (m) => m.cpuMs !== undefined && resolve(m.cpuMs)));
    child.send('stop');
    relayCpuMs = await report;
  } else await relay.stop();
  await sub.stop();
  await bus.close();
  await pool?.end();
  await auditPool?.end();
  const count = await store.count({ environment: 'live' });
  await ch.close();
  fs.rmSync(chDir, { recursive: true, force: true });
  const per1000 = (ms) => (ms === undefined ? undefined : Number((ms / (EVENTS / 1000)).toFixed(1)));
  console.log(`${name}: ${Math.round(EVENTS / seconds)} events/s`);
  const othersCpu = Object.fromEntries(Object.keys(others1).map((k) => [k, per1000(others1[k] - others0[k])]));
  return { name, seconds, rate: EVENTS / seconds, count, consumerCpu: per1000((used.user + used.system) / 1000), relayCpu: per1000(relayCpuMs), othersCpu };
}

/** The PostgreSQL server's process (the postmaster: its backends and helpers are its children); a local server only. */
async function postgresPid(url) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query('SELECT pg_backend_pid() AS pid');
    return processTable().get(rows[0].pid).ppid;
  } finally {
    await client.end();
  }
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
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  for (let from = 0; from < rows.length; from += 20_000) {
    await ch.insert({ table: 'audit_logs', values: rows.slice(from, from + 20_000), format: 'JSONCompactEachRow', columns: [...LOG_COLUMNS] });
  }
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu0);
  await ch.close();
  fs.rmSync(chDir, { recursive: true, force: true });
  return { seconds, rate: EVENTS / seconds, cpu: Number(((used.user + used.system) / 1000 / (EVENTS / 1000)).toFixed(1)) };
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
    results.push(await ingestOnce('Postgres bus', db.url, { kind: 'postgres' }, INGEST_OPTIONS, { postgres: await postgresPid(db.url) }));
    await db.drop();
  }
  const missing = BUSES.includes('kafka') ? kafkaUnavailable() : 'not asked for (BENCH_BUSES)';
  if (missing) console.log(`kafka: not measured (${missing})`);
  else {
    const broker = await startKafka({ fastStart: false });
    try {
      for (const compression of KAFKA_CODECS) {
        const db = await testDatabase();
        t0 = (await fillOutbox(db.url, EVENTS)).t0;
        const bytes0 = broker.logBytes('auth-events');
        const spec = { kind: 'kafka', brokers: broker.brokers, compression };
        const result = await ingestOnce(`Kafka bus (${compression})`, db.url, spec, INGEST_OPTIONS, { postgres: await postgresPid(db.url), broker: broker.pid });
        result.logBytes = Math.round((broker.logBytes('auth-events') - bytes0) / EVENTS);
        results.push(result);
        await db.drop();
      }
    } finally {
      await broker.stop();
    }
  }
  await stopTestPostgres();
  const ceil = await ceiling(t0);
  const how = `${INGEST_OPTIONS.chained ? 'chained' : 'unchained'}, relay ${INGEST_OPTIONS.separateRelay ? 'in its own process' : 'in the consumer\'s process'}`;
  console.log(`\n| path (${how}) | events | seconds | events/s | of the ceiling | stored | CPU ms per 1,000 events: consumer + chdb / relay / PostgreSQL / broker / all | bytes per event in the broker's log |`);
  console.log('|---|---:|---:|---:|---:|---:|---|---:|');
  for (const r of results) {
    const all = [r.consumerCpu, r.relayCpu, r.othersCpu.postgres, r.othersCpu.broker].reduce((sum, v) => sum + (v ?? 0), 0);
    const cpu = `${r.consumerCpu} / ${r.relayCpu ?? '(same process)'} / ${r.othersCpu.postgres ?? ''} / ${r.othersCpu.broker ?? ''} / ${all.toFixed(1)}`;
    console.log(`| outbox → ${r.name} → ClickHouse | ${EVENTS} | ${r.seconds.toFixed(1)} | ${Math.round(r.rate)} | ${(r.rate / ceil.rate).toFixed(2)} | ${r.count} | ${cpu} | ${r.logBytes ?? ''} |`);
  }
  console.log(`| plain bulk insert of the same rows (ceiling) | ${EVENTS} | ${ceil.seconds.toFixed(1)} | ${Math.round(ceil.rate)} | 1.00 | ${EVENTS} | ${ceil.cpu} | |`);
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
      const r = await ingestOnce(mode, db.url, { kind: 'postgres' }, { chained: mode === 'chained' });
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

/** The generated entries of the search benchmark: `number` n of `total` (30 days from 2026-10-22), as SQL. */
const generatedRowsSql = (from, n, total) => `
  SELECT concat('log_', leftPad(lower(hex(number)), 26, '0')), 'live',
         toDateTime64('2026-10-22 00:00:00', 3, 'UTC') + toIntervalMillisecond(number * intDiv(2592000000, ${total})),
         arrayElement(['user.login','user.logout','user.created','user.updated','session.created','api_key.created','policy.updated','auth.failed'], (number % 8) + 1),
         concat('user_', toString(number % 200000)),
         if(number % 100000 = 7, concat('needle', toString(number), '@rare-domain.example'), concat('person', toString(number % 200000), '@example.com')),
         'user', concat('ses_', toString(number)), 'session',
         concat(toString(81 + number % 100), '.', toString(number % 250), '.1.', toString(number % 200)), 'Mozilla/5.0 (bench)',
         'London', 'GB', 'England', 51.5, -0.12,
         if(number % 13 = 0, 'failure', 'success'), concat('req_', toString(number)), '{"authMethod":"password","mfaUsed":false}'
  FROM numbers(${from}, ${n})`;

/** The same entry as {@link generatedRowsSql} makes, as a LogRow (the ingest stream's entries). */
const generatedRow = (number, total) => {
  const hex = number.toString(16).padStart(26, '0');
  return {
    id: `log_${hex}`,
    environment: 'live',
    timestamp: new Date(Date.parse('2026-10-22T00:00:00Z') + number * Math.floor(2_592_000_000 / total)).toISOString(),
    event: KINDS[number % 8],
    actor_id: `user_${number % 200_000}`,
    actor_email: number % 100_000 === 7 ? `needle${number}@rare-domain.example` : `person${number % 200_000}@example.com`,
    actor_type: 'user',
    target_id: `ses_${number}`,
    target_type: 'session',
    ip: `${81 + (number % 100)}.${number % 250}.1.${number % 200}`,
    user_agent: 'Mozilla/5.0 (bench)',
    city: 'London',
    country: 'GB',
    region: 'England',
    lat: 51.5,
    lng: -0.12,
    result: number % 13 === 0 ? 'failure' : 'success',
    trace_id: `req_${number}`,
    metadata: '{"authMethod":"password","mfaUsed":false}',
    actor_name: '',
  };
};

/**
 * New entries at a steady rate (the consumer's steady state: one block per batch written by LogStore.write, no
 * lookup, as the chained store does above its stored bus offsets) continuing the generated series, so that
 * fresh parts keep arriving and chdb keeps merging them while queries run.
 */
function ingestStream(store, total, ratePerSecond, batchesPerSecond = 4) {
  let next = total;
  let stored = 0;
  let stopped = false;
  let lagging = 0;
  const perBatch = Math.max(1, Math.round(ratePerSecond / batchesPerSecond));
  const started = performance.now();
  const done = (async () => {
    for (let batch = 0; !stopped; batch++) {
      const rows = Array.from({ length: perBatch }, () => generatedRow(next++, total));
      await store.write(rows.map((row) => ({ row, position: 0, link: 0 })));
      stored += rows.length;
      const wait = started + ((batch + 1) * 1000) / batchesPerSecond - performance.now();
      if (wait > 0) await sleep(wait);
      else lagging++;
    }
  })();
  return {
    async stop() {
      stopped = true;
      await done;
      const seconds = (performance.now() - started) / 1000;
      return { stored, seconds, rate: stored / seconds, lagging };
    },
  };
}

/** ClickHouse's cumulative merge counters (system.events), to show that merges ran during a measurement. */
async function mergeCounters(ch) {
  const rs = await ch.query({ query: `SELECT event, value FROM system.events WHERE event IN ('Merge', 'MergedRows', 'MergeTotalMilliseconds')`, format: 'JSONEachRow' });
  const out = { Merge: 0, MergedRows: 0, MergeTotalMilliseconds: 0 };
  for (const r of await rs.json()) out[r.event] = Number(r.value);
  return out;
}

async function activeParts(ch) {
  const rs = await ch.query({ query: `SELECT count() AS n FROM system.parts WHERE database = currentDatabase() AND table = 'audit_logs' AND active`, format: 'JSONEachRow' });
  return Number((await rs.json())[0].n);
}

/**
 * Search and list over BENCH_ROWS entries through the audit use cases (LogQueries: exactly what
 * `POST /v1/logs/search` and `GET /v1/logs` run, highlights and totalHits included), each query BENCH_RUNS
 * times: first on the quiet, merged table, then with an ingest stream of BENCH_INGEST_RATE entries/s
 * (default 2,000, in BENCH_INGEST_BLOCKS blocks a second, default 4; on a chdb connection of its own, as the
 * audit service inserts, or with BENCH_WRITER=same on the queries' connection) running, so that chdb merges fresh parts while the queries run; then
 * BENCH_CONCURRENCY (default 50) searches at once, BENCH_CONCURRENT_ROUNDS (default 4) times, with the stream
 * still running: searches/s and the latency each caller saw.
 * BENCH_SEARCH_DATA=<dir>: keep the generated, merged table in <dir> and start from a copy of it next time (when made with as many
 * rows under the same ClickHouse schema).
 */
async function search() {
  const ingestRate = Number(process.env.BENCH_INGEST_RATE ?? 2000);
  // Inserts a second: the consumer hands over a partial batch at most once per AUDIT_BATCH_WAIT_MS (1 s), so at
  // 2,000 entries/s it inserts once a second; 4 is the harsher default.
  const ingestBlocks = Number(process.env.BENCH_INGEST_BLOCKS ?? 4);
  const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 50);
  const concurrentRounds = Number(process.env.BENCH_CONCURRENT_ROUNDS ?? 4);
  const keep = process.env.BENCH_SEARCH_DATA;
  console.log(`# bench/audit search, ${machine()}, ${ROWS.toLocaleString('en')} stored entries, ${RUNS} runs each, ingest stream ${ingestRate} entries/s in ${ingestBlocks} blocks a second${process.env.BENCH_WRITER === 'same' ? ' on the queries\' connection' : ' on a connection of its own'}`);
  const chDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-audit-search-'));
  // A kept table is reused only when it has as many rows and was made under the same ClickHouse schema.
  const made = { rows: ROWS, schema: MIGRATIONS.at(-1).version };
  const reuse = keep && fs.existsSync(path.join(keep, 'generated.json')) && JSON.stringify(JSON.parse(fs.readFileSync(path.join(keep, 'generated.json'), 'utf8'))) === JSON.stringify(made);
  if (reuse) fs.cpSync(keep, chDir, { recursive: true });
  // ClickHouse's query condition cache would answer every repetition of a WHERE from memory: off, so each run
  // really filters (production keeps it on, which only makes repeated searches faster).
  const ch = await openClickHouse({ path: chDir }, { use_query_condition_cache: 0 });
  try {
    await migrateClickHouse(ch);
    const store = new LogStore(ch);
    if (reuse) console.log(`generated table copied from ${keep}`);
    else {
      // Generated server-side: 30 days of entries, 8 event kinds, 200,000 actors, one actor in 100,000 with a
      // rare email domain (the selective term).
      const started = performance.now();
      const CHUNK = 2_000_000;
      for (let from = 0; from < ROWS; from += CHUNK) {
        await ch.command({
          query: `INSERT INTO audit_logs (id, environment, timestamp, event, actor_id, actor_email, actor_type, target_id, target_type, ip, user_agent, city, country, region, lat, lng, result, trace_id, metadata)
            ${generatedRowsSql(from, Math.min(CHUNK, ROWS - from), ROWS)}`,
        });
      }
      console.log(`generated ${ROWS.toLocaleString('en')} rows in ${((performance.now() - started) / 1000).toFixed(1)} s`);
      await ch.command({ query: 'OPTIMIZE TABLE audit_logs FINAL' }).catch(() => undefined);
      await sleep(5000); // the merged-away parts' clean-up
      if (keep) {
        fs.rmSync(keep, { recursive: true, force: true });
        fs.cpSync(chDir, keep, { recursive: true });
        fs.writeFileSync(path.join(keep, 'generated.json'), JSON.stringify(made));
      }
    }
    const queries = new LogQueries(store, SEARCH_SECRET);
    // The same use case with totalHits counted row by row, as before the text index counts (for comparison in
    // the same run; BENCH_COMPARE=0 leaves it out).
    const compare = process.env.BENCH_COMPARE !== '0';
    const countingRows = new LogQueries(
      { list: (...a) => store.list(...a), get: (...a) => store.get(...a), counts: (...a) => store.counts(...a), count: (f, c) => store.count(f, c && { where: c.where, params: c.params }) },
      SEARCH_SECRET,
    );
    const environment = 'live';
    // BENCH_BASELINE=<a build of @secsvc/audit-store, e.g. a copy of libs/audit-store/dist made before a change>:
    // the same searches through that code too, in the same run and process ("(baseline)" rows).
    const baselineDir = process.env.BENCH_BASELINE;
    const baseline = baselineDir && require(path.resolve(baselineDir));
    const baselineQueries = baseline && new baseline.LogQueries(new baseline.LogStore(ch), SEARCH_SECRET);
    const searchOf = (query, use = queries) => async () => {
      const r = await use.search({ environment, query, limit: 20, cursor: '' });
      if (r.hits.length && !r.hits.every((h) => Object.keys(h.highlights).length)) throw new Error(`a hit of ${query} without highlights`);
      return `${r.hits.length} shown, totalHits ${r.totalHits}`;
    };
    const deepRow = (await store.list({ environment }, 100_000)).at(-1);
    const deepCursor = encodeCursor({ kind: 'logs', environment, after: cursorAfter(deepRow) }, SEARCH_SECRET);
    const listOf = (req) => async () => {
      const page = await queries.list({ environment, limit: 20, cursor: '', ...req });
      return `${page.rows.length} rows, hasMore ${page.hasMore}`;
    };
    const searches = [
      ['selective term `rare`', 'rare'],
      ['selective field `actor.email:needle7@rare-domain.example`', 'actor.email:needle7@rare-domain.example'],
      ['common term `login` (1 in 8)', 'login'],
      ['common term `success` (12 in 13)', 'success'],
    ];
    const cases = [
      ...searches.flatMap(([name, q]) => [
        [name, searchOf(q)],
        ...(baselineQueries ? [[`${name} (baseline)`, searchOf(q, baselineQueries)]] : []),
        ...(compare ? [[`${name}, totalHits by counting rows (before)`, searchOf(q, countingRows)]] : []),
      ]),
      ['newest-first page (GET /logs, limit 20)', listOf({})],
      ['page after a deep cursor (100,000 back)', listOf({ cursor: deepCursor })],
      ['page filtered by events=user.login', listOf({ events: ['user.login'] })],
    ];
    const measure = async (name, fn) => {
      await fn();
      const times = [];
      let info = '';
      for (let i = 0; i < RUNS; i++) {
        const t = performance.now();
        info = await fn();
        times.push(performance.now() - t);
      }
      console.log(`| ${name} | ${quantile(times, 0.5).toFixed(1)} | ${quantile(times, 0.99).toFixed(1)} | ${Math.max(...times).toFixed(1)} | ${info} |`);
    };
    const header = () => {
      console.log('| query | p50 ms | p99 ms | max ms | result |');
      console.log('|---|---:|---:|---:|---|');
    };

    console.log(`\n## quiet table (${await activeParts(ch)} active parts, no inserts)\n`);
    header();
    for (const [name, fn] of cases) await measure(name, fn);

    // As the audit service stores: on a chdb connection of its own (BENCH_WRITER=same: on the queries' one).
    const writer = process.env.BENCH_WRITER === 'same' ? undefined : await openClickHouse({ path: chDir });
    const stream = ingestStream(writer ? new LogStore(ch, undefined, { writer }) : store, ROWS, ingestRate, ingestBlocks);
    await sleep(5000); // fresh parts and their first merges under way
    const before = await mergeCounters(ch);
    const partsBefore = await activeParts(ch);
    console.log(`\n## with the ingest stream running (${ingestRate} entries/s; ${partsBefore} active parts at the start)\n`);
    header();
    for (const [name, fn] of cases) await measure(name, fn);

    console.log(`\n## ${concurrency} concurrent searches (the four searches in turn), ${concurrentRounds} rounds, ingest stream running\n`);
    console.log('| totalHits | round | searches | wall s | searches/s | p50 ms | p99 ms | max ms |');
    console.log('|---|---|---:|---:|---:|---:|---:|---:|');
    const variants = [['text index where cheaper', queries], ...(baselineQueries ? [['baseline', baselineQueries]] : []), ...(compare ? [['counting rows (before)', countingRows]] : [])];
    const all = variants.map(() => ({ latencies: [], wall: 0 }));
    const row = (name, round, n, wall, latencies) =>
      console.log(`| ${name} | ${round} | ${n} | ${wall.toFixed(2)} | ${(n / wall).toFixed(1)} | ${quantile(latencies, 0.5).toFixed(0)} | ${quantile(latencies, 0.99).toFixed(0)} | ${Math.max(...latencies).toFixed(0)} |`);
    for (let round = 0; round < concurrentRounds; round++) {
      for (const [v, [name, use]] of variants.entries()) {
        const started = performance.now();
        const latencies = await Promise.all(
          Array.from({ length: concurrency }, async (_, i) => {
            const t = performance.now();
            await searchOf(searches[i % searches.length][1], use)();
            return performance.now() - t;
          }),
        );
        const wall = (performance.now() - started) / 1000;
        all[v].wall += wall;
        all[v].latencies.push(...latencies);
        row(name, round + 1, concurrency, wall, latencies);
      }
    }
    for (const [v, [name]] of variants.entries()) row(name, 'all', all[v].latencies.length, all[v].wall, all[v].latencies);

    const after = await mergeCounters(ch);
    const ingested = await stream.stop();
    await writer?.close();
    console.log(
      `\ningest stream: ${ingested.stored.toLocaleString('en')} entries in ${ingested.seconds.toFixed(1)} s (${Math.round(ingested.rate)}/s, ${ingested.lagging} batches late); ` +
        `during the measurements chdb ran ${after.Merge - before.Merge} merges of ${(after.MergedRows - before.MergedRows).toLocaleString('en')} rows ` +
        `(${((after.MergeTotalMilliseconds - before.MergeTotalMilliseconds) / 1000).toFixed(1)} s of merging); active parts ${partsBefore} → ${await activeParts(ch)}`,
    );
  } finally {
    await ch.close();
    fs.rmSync(chDir, { recursive: true, force: true });
  }
}

const mode = process.argv[2] ?? 'all';
if (mode === 'relay') {
  relayChild(process.argv[3], JSON.parse(process.argv[4])).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
(async () => {
  if (mode === 'ingest' || mode === 'all') await ingest();
  if (mode === 'search' || mode === 'all') await search();
  if (mode === 'chain' || mode === 'all') await chainCost();
  if (mode === 'chain-ingest' || mode === 'all') await chainIngest();
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
