// Log export throughput and the worker's memory: 1,000,000 stored entries exported to CSV and to JSON, into
// the local directory store and into S3 (a real versitygw), through the whole local stack (the worker reads
// rows through audit's StreamLogs, as in the local profile). Also a 100,000-entry export (memory must not
// grow with size) and, as ceilings measured in the same run: ClickHouse alone reading the same rows (stored
// columns, and rendered as CSV and JSON, one query each, in the filling child), StreamLogs read alone by a
// client that only walks the rows, and the JSON file's bytes written alone to the same S3 server (after the
// S3 exports); the S3 server's CPU is reported too, as it shares the machine.
//
//   npm run build && npm run bench:export        (BENCH_ROWS=1000000 by default; needs versitygw for S3;
//                                                 BENCH_PROFILE_DIR=<dir> for CPU profiles of the apps)
const { spawnSync } = require('node:child_process');
const { Buffer } = require('node:buffer');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const { setTimeout } = require('node:timers');
const grpc = require('@grpc/grpc-js');
const { startLocalStack } = require('@secsvc/dev/stack');
const { s3SkipReason, startTestS3 } = require('@secsvc/dev/testing');
const { KEY, BENCH_LIMITS, cpuMs, machine } = require('./support');

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
// 20 days ago (inside the 365-day retention); the filling child process gets the parent's value.
const BASE = Number(process.env.BENCH_BASE_MS ?? Date.now() - 20 * 86_400_000);
const STEP_MS = 1; // one entry per millisecond: 1,000,000 entries span ~17 minutes
const WINDOW = { from: new Date(BASE).toISOString(), to: new Date(BASE + ROWS * STEP_MS).toISOString() };
const SMALL = { from: WINDOW.from, to: new Date(BASE + (ROWS / 10) * STEP_MS).toISOString() };

/** Child mode: fills an embedded ClickHouse directory with ROWS entries, then exits (releasing it). */
async function fill(dir) {
  const { applyRetention, LogStore, migrateClickHouse, openClickHouse, rowFromEvent } = require('@secsvc/audit-store');
  const ch = await openClickHouse({ path: dir });
  await migrateClickHouse(ch);
  // As the audit service will find it: its start-up then changes nothing (a TTL change rewrites every part).
  await applyRetention(ch, 365);
  const store = new LogStore(ch);
  const places = [undefined, { city: 'London', country: 'GB', region: 'England', lat: 51.5142, lng: -0.0931 }, { city: 'Zürich', country: 'CH', region: 'Zurich', lat: 47.3667, lng: 8.55 }];
  const kinds = ['user.login', 'user.logout', 'api_key.created', 'user.password_reset.failed'];
  for (let start = 0; start < ROWS; start += 25_000) {
    const batch = [];
    for (let i = start; i < Math.min(ROWS, start + 25_000); i++) {
      batch.push(
        rowFromEvent(
          {
            id: `log_01jd${String(i).padStart(22, '0')}`,
            environment: 'live',
            type: kinds[i % 4],
            timestamp: new Date(BASE + i * STEP_MS).toISOString(),
            actor: i % 9 === 0 ? { type: 'anonymous' } : { id: `user_01jd${String(i % 5000).padStart(22, '0')}`, email: `person${i % 5000}@example.com`, type: 'user' },
            target: i % 2 ? { id: `ses_01jd${String(i).padStart(22, '0')}`, type: 'session' } : undefined,
            context: { ip: `81.2.${i % 250}.${i % 199}`, userAgent: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15' },
            result: i % 10 ? 'success' : 'failure',
            traceId: `req_01jd${String(i).padStart(22, '0')}`,
            metadataJson: JSON.stringify({ authMethod: i % 3 ? 'password' : 'api_key', mfaUsed: i % 4 === 0 }),
          },
          places[i % 3],
        ),
      );
    }
    await store.insert(batch);
  }
  // Historical data as it settles: parts merged, so no background merge competes with the measurement.
  await ch.command({ query: 'OPTIMIZE TABLE audit_logs FINAL' });
  // The ceilings ClickHouse itself sets, in this process (no service, no gRPC, no file): the whole window read
  // newest first in one query, as stored columns and as the rendered entries of each format.
  const { renderedSelectSql, RENDER_SETTINGS } = require('@secsvc/audit-store');
  const where = `environment = 'live' AND timestamp >= toDateTime64('${WINDOW.from.replace('T', ' ').replace('Z', '')}', 3, 'UTC') AND timestamp < toDateTime64('${WINDOW.to.replace('T', ' ').replace('Z', '')}', 3, 'UTC')`;
  const raw = [
    ['raw read of the same rows (SELECT of the stored columns, RowBinary)', `SELECT * FROM audit_logs WHERE ${where} ORDER BY timestamp DESC, id DESC FORMAT RowBinary`],
    ['ClickHouse rendering CSV, one query', `${renderedSelectSql('csv')} FROM audit_logs WHERE ${where} ORDER BY timestamp DESC, id DESC FORMAT RowBinary`],
    ['ClickHouse rendering JSON, one query', `${renderedSelectSql('json')} FROM audit_logs WHERE ${where} ORDER BY timestamp DESC, id DESC FORMAT RowBinary`],
  ];
  const out = [];
  for (const [label, query] of raw) {
    const cpu0 = process.cpuUsage();
    const t = performance.now();
    const r = await ch.exec({ query, clickhouse_settings: RENDER_SETTINGS });
    let bytes = 0;
    for await (const part of r.stream) bytes += part.length;
    const seconds = (performance.now() - t) / 1000;
    const cpu = process.cpuUsage(cpu0);
    out.push({ label, rows: ROWS, seconds, rowsPerSecond: Math.round(ROWS / seconds), mb: Math.round(bytes / 1048576), chUs: Number(((cpu.user + cpu.system) / ROWS).toFixed(2)) });
  }
  fs.writeFileSync(process.argv[4], JSON.stringify(out));
  await ch.close();
}

const api = (stack) => async (method, p, body) => {
  const res = await globalThis.fetch(`${stack.baseUrl}${p}`, {
    method,
    headers: { authorization: `Bearer ${KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: await res.json() };
};

/** CPU time (user + system) a process (and any children) has used so far, in microseconds. */
const cpuMicros = (pid) => cpuMs({ pid }).pid * 1000;

/** Peak resident set (VmHWM) of a process, in MB. */
function peakRssMb(pid) {
  const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Math.round(Number(m[1]) / 1024);
}

async function exportOnce(stack, label, format, window, expected, s3Pid) {
  // A fresh worker process per run, so its peak RSS is this export's.
  await stack.restart('export-worker', 'SIGTERM');
  await new Promise((r) => setTimeout(r, 1000));
  const pid = stack.pid('export-worker');
  const idleMb = peakRssMb(pid);
  const auditPid = stack.pid('audit');
  // Audit's CPU while idle (the embedded ClickHouse's background work, the consumer's polls): subtracted
  // below, so the per-entry figure is the export's own.
  const idle0 = { at: performance.now(), cpu: cpuMicros(auditPid) };
  await new Promise((r) => setTimeout(r, 3000));
  const auditIdlePerMs = (cpuMicros(auditPid) - idle0.cpu) / (performance.now() - idle0.at);
  const cpu0 = { worker: cpuMicros(pid), audit: cpuMicros(auditPid), s3: s3Pid ? cpuMicros(s3Pid) : 0, at: performance.now() };
  const call = api(stack);
  const created = await call('POST', '/logs/export', { ...window, format });
  if (created.status !== 202) throw new Error(`POST /logs/export: ${created.status} ${JSON.stringify(created.body)}`);
  let data;
  for (;;) {
    data = (await call('GET', `/logs/export/${created.body.data.exportId}`)).body.data;
    if (data.status !== 'processing') break;
    await new Promise((r) => setTimeout(r, 250));
  }
  if (data.status !== 'completed' || data.totalRecords !== expected) throw new Error(`${label}: ${JSON.stringify(data)}`);
  const seconds = (Date.parse(data.completedAt) - Date.parse(data.createdAt)) / 1000;
  // CPU per entry of each side (the polling above adds a little to audit's), less sensitive to a busy
  // machine than wall time: with a core each the pipeline could reach 1e6 / max(worker, audit) entries/s.
  const workerUs = (cpuMicros(pid) - cpu0.worker) / data.totalRecords;
  const auditUs = (cpuMicros(auditPid) - cpu0.audit - auditIdlePerMs * (performance.now() - cpu0.at)) / data.totalRecords;
  const result = {
    label,
    rows: data.totalRecords,
    seconds,
    rowsPerSecond: Math.round(data.totalRecords / seconds),
    mb: Math.round(data.fileSizeBytes / 1048576),
    peakRssMb: peakRssMb(pid),
    idleRssMb: idleMb,
    auditIdleCpuPercent: Math.round(auditIdlePerMs / 10),
    workerUs: Number(workerUs.toFixed(2)),
    auditUs: Number(auditUs.toFixed(2)),
    ...(s3Pid && { s3Us: Number(((cpuMicros(s3Pid) - cpu0.s3) / data.totalRecords).toFixed(2)) }),
  };
  console.log(JSON.stringify(result));
  return result;
}

/**
 * The S3 ceiling: the bytes of the local JSON export written alone to the same S3 server by the store the
 * worker uses (same part size and signing), 1 MiB at a time from a file already in the page cache. Reported
 * per entry of that export, with this process's CPU (the client side) and the S3 server's.
 */
async function s3WriteOnly(s3, bucket, file, entries) {
  const { createObjectStore, loadConfig, objectStoreConfig } = require('@secsvc/shared');
  const store = createObjectStore(loadConfig(objectStoreConfig, s3.env(bucket)));
  const buf = Buffer.allocUnsafe(1 << 20);
  const fd = fs.openSync(file, 'r');
  const cpu0 = { client: process.cpuUsage(), s3: cpuMicros(s3.pid) };
  const started = performance.now();
  let size;
  let finishMs;
  try {
    const writer = await store.create('bench/ceiling.json', 'application/json');
    for (let n; (n = fs.readSync(fd, buf, 0, buf.length, null)) > 0; ) await writer.write(buf.subarray(0, n));
    const finishing = performance.now();
    ({ size } = await writer.finish());
    finishMs = Math.round(performance.now() - finishing);
  } finally {
    fs.closeSync(fd);
    await store.close();
  }
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu0.client);
  const result = {
    label: 'ceiling: the JSON file alone written to S3 (versitygw), per entry of it',
    rows: entries,
    seconds,
    rowsPerSecond: Math.round(entries / seconds),
    mb: Math.round(size / 1048576),
    workerUs: Number(((used.user + used.system) / entries).toFixed(2)),
    s3Us: Number(((cpuMicros(s3.pid) - cpu0.s3) / entries).toFixed(2)),
    // The last parts' uploads and CompleteMultipartUpload (versitygw's posix backend joins the parts into one file).
    finishMs,
  };
  console.log(JSON.stringify(result));
  return result;
}

/** The newest file with this extension under a directory (the local store's export files). */
function newestFile(dir, ext) {
  let best;
  for (const entry of fs.readdirSync(dir, { recursive: true })) {
    const file = path.join(dir, String(entry));
    if (!file.endsWith(ext)) continue;
    const st = fs.statSync(file);
    if (st.isFile() && (!best || st.mtimeMs > best.mtimeMs)) best = { file, mtimeMs: st.mtimeMs };
  }
  return best?.file;
}

/** StreamLogs read alone (rows walked, nothing written): the ceiling of what the worker can receive. */
async function streamOnly(stack) {
  const { AuditServiceBulkClient } = require('@secsvc/proto');
  const { RenderedRows } = require('@secsvc/audit-store');
  // The worker's client and channel settings (a 4 MiB HTTP/2 window, apps/export-worker/src/main.ts).
  const client = new AuditServiceBulkClient(stack.grpc.audit, grpc.credentials.createInsecure(), { 'grpc-node.flow_control_window': 4 << 20 });
  const started = performance.now();
  let rows = 0;
  for await (const chunk of client.streamLogs({ environment: 'live', ...WINDOW, events: [], query: '', pageSize: 50_000, format: 'csv' })) {
    const r = new RenderedRows(chunk.rows);
    while (r.next()) rows++;
  }
  client.close();
  const seconds = (performance.now() - started) / 1000;
  const result = { label: 'StreamLogs read alone, CSV (ceiling)', rows, seconds, rowsPerSecond: Math.round(rows / seconds) };
  console.log(JSON.stringify(result));
  return result;
}

async function withStack(dataDir, env, fn) {
  const stack = await startLocalStack({
    rootDir: path.resolve(__dirname, '..'),
    dataDir,
    host: '127.0.0.1',
    port: 0,
    ports: { postgres: 0, identity: 0, policy: 0, audit: 0, admin: { gateway: 0, identity: 0, policy: 0, audit: 0, 'export-worker': 0 } },
    env: { LOG_LEVEL: 'warn', BOOTSTRAP_API_KEY: KEY, ...BENCH_LIMITS, AUDIT_RETENTION_DAYS: '365', ...env },
    // BENCH_PROFILE_DIR: every app process writes a V8 CPU profile there when it stops (where the time goes).
    ...(process.env.BENCH_PROFILE_DIR ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] } : {}),
  });
  try {
    return await fn(stack);
  } finally {
    await stack.stop();
  }
}

async function main() {
  if (process.argv[2] === '--fill') return fill(process.argv[3]);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'secsvc-bench-export-'));
  fs.chmodSync(tmp, 0o711);
  const dataDir = path.join(tmp, 'data');
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o711 });
  try {
    console.log(`${machine()}; ${ROWS.toLocaleString('en')} entries`);
    let t = performance.now();
    const ceilingsFile = path.join(tmp, 'ceilings.json');
    const filled = spawnSync(process.execPath, [path.join(__dirname, 'export.js'), '--fill', path.join(dataDir, 'clickhouse'), ceilingsFile], { stdio: 'inherit', env: { ...process.env, BENCH_BASE_MS: String(BASE) } });
    if (filled.status !== 0) throw new Error('filling ClickHouse failed');
    console.log(`filled embedded ClickHouse in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    const ceilings = JSON.parse(fs.readFileSync(ceilingsFile, 'utf8'));
    for (const c of ceilings) console.log(JSON.stringify(c));
    const results = [];
    await withStack(dataDir, {}, async (stack) => {
      // The first export also warms the page cache for the rest (the ceiling included).
      results.push(await exportOnce(stack, 'csv, local directory', 'csv', WINDOW, ROWS));
      results.unshift(await streamOnly(stack));
      results.push(await exportOnce(stack, 'json, local directory', 'json', WINDOW, ROWS));
      results.push(await exportOnce(stack, `csv, local directory, ${(ROWS / 10).toLocaleString('en')} entries`, 'csv', SMALL, ROWS / 10));
    });
    const skip = s3SkipReason();
    if (skip) console.log(`S3 runs skipped: ${skip}`);
    else {
      const s3 = await startTestS3();
      try {
        const bucket = await s3.createBucket();
        const jsonFile = newestFile(path.join(dataDir, 'exports'), '.json');
        if (!jsonFile) throw new Error('the local JSON export file was not found');
        await withStack(dataDir, s3.env(bucket), async (stack) => {
          results.push(await exportOnce(stack, 'csv, S3 (versitygw)', 'csv', WINDOW, ROWS, s3.pid));
          results.push(await exportOnce(stack, 'json, S3 (versitygw)', 'json', WINDOW, ROWS, s3.pid));
        });
        // After the exports: the server's writes (and the page cache's flushing of them) would slow what follows.
        results.push(await s3WriteOnly(s3, bucket, jsonFile, ROWS));
      } finally {
        await s3.stop();
      }
    }
    // Ratios against the raw read of the same rows by ClickHouse alone (the first ceiling).
    const ceiling = ceilings[0].rowsPerSecond;
    console.log('\n| run | entries | seconds | entries/s | of the raw read | file MB | worker peak RSS MB (idle) | CPU µs/entry: worker (or S3 client) / audit (ClickHouse alone) | S3 server CPU µs/entry |');
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const r of [...ceilings, ...results]) {
      const cpu = r.chUs !== undefined ? `(${r.chUs})` : r.workerUs === undefined ? '' : `${r.workerUs} / ${r.auditUs ?? ''}`;
      console.log(`| ${r.label} | ${r.rows.toLocaleString('en')} | ${r.seconds.toFixed(2)} | ${r.rowsPerSecond.toLocaleString('en')} | ${(r.rowsPerSecond / ceiling).toFixed(2)} | ${r.mb ?? ''} | ${r.peakRssMb ? `${r.peakRssMb} (${r.idleRssMb})` : ''} | ${cpu} | ${r.s3Us ?? ''} |`);
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
