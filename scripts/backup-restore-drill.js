#!/usr/bin/env node
// The backup and restore drill (docs/runbooks/backup-restore.md) on the local profile's data, against an S3 store:
//
//   npm run drill:restore                      DATA_DIR (default .data) of a stopped local stack
//   node scripts/backup-restore-drill.js check <drill dir>
//
// 1. Backs up, while nothing else runs on the data directory: PostgreSQL with pg_basebackup (a physical base
//    backup with its WAL, tar format, as barman-cloud takes one) and the ClickHouse log with
//    `BACKUP DATABASE ... TO S3(...)`, both into the bucket, with the source's row counts and checksums
//    (facts.json) beside them.
// 2. Restores both from the bucket into fresh places: the base backup checked with pg_verifybackup, unpacked
//    and started as a new PostgreSQL; `RESTORE DATABASE ... FROM S3(...)` into a new embedded ClickHouse. The
//    result is a local data directory (<drill dir>/restored: postgres, clickhouse, secrets.json) that
//    `DATA_DIR=<drill dir>/restored npm start` runs.
// 3. Compares (the `check` step, also runnable on its own): every table's row count and checksum, PostgreSQL
//    and ClickHouse, against facts.json, and the audit hash chain of every environment across both restored
//    stores. Exit code 0 when everything matches, 1 on a difference, 2 on an error.
//
// The S3 store: BACKUP_S3_ENDPOINT, BACKUP_S3_BUCKET, BACKUP_S3_ACCESS_KEY_ID, BACKUP_S3_SECRET_ACCESS_KEY
// (BACKUP_S3_REGION, default us-east-1; path-style addressing), else a versitygw started for the drill
// (scripts/install-tools.sh installs it, and the PostgreSQL 18 client tools). DRILL_DIR: where the drill's
// files go (default a new temporary folder); it is kept, and printed.
const { execFile } = require('node:child_process');
const { createReadStream, createWriteStream, existsSync, readFileSync } = require('node:fs');
const fs = require('node:fs/promises');
const os = require('node:os');
const path = require('node:path');
const { pipeline } = require('node:stream/promises');
const { promisify } = require('node:util');
const { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } = require('@aws-sdk/client-s3');
const pg = require('pg');
const { AuditChain, ChainKey, openClickHouse } = require('@secsvc/audit-store');
const { createPool } = require('@secsvc/shared');
const { freePort, loadStackSecrets, startEmbeddedPostgres } = require('@secsvc/dev/stack');
const { findTool, startTestS3 } = require('@secsvc/dev/testing');

const run = promisify(execFile);
const rootDir = path.resolve(__dirname, '..');
/** The database chdb keeps the log in (a server's is CLICKHOUSE_DATABASE). */
const CH_DATABASE = 'default';

/** Secrets the drill handles (the S3 secret key is inside the ClickHouse statements): never printed. */
const hidden = new Set();
const redact = (text) => [...hidden].reduce((t, secret) => t.split(secret).join('***'), text);
const say = (line) => process.stderr.write(`drill: ${redact(line)}\n`);

class DrillError extends Error {}

function tool(name) {
  const found = findTool(name, name.toUpperCase(), 'run scripts/install-tools.sh');
  if (!found) throw new DrillError(`${name} (PostgreSQL 18) not found: run scripts/install-tools.sh (or set ${name.toUpperCase()})`);
  return found;
}

/** PostgreSQL refuses to run as root: its files then belong to the `postgres` user (stack/postgres.ts makes it). */
async function postgresOwner() {
  if (process.getuid?.() !== 0) return undefined;
  const id = async (flag) => Number((await run('id', [flag, 'postgres'])).stdout.trim());
  return { uid: await id('-u'), gid: await id('-g') };
}

/** The postmaster of a data directory, when one runs (its pid file names a live process). */
function runningPostmaster(pgData) {
  const pidFile = path.join(pgData, 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}

// ---- S3 ----

async function openStore() {
  const e = process.env;
  if (e.BACKUP_S3_ENDPOINT || e.BACKUP_S3_BUCKET) {
    for (const v of ['BACKUP_S3_ENDPOINT', 'BACKUP_S3_BUCKET', 'BACKUP_S3_ACCESS_KEY_ID', 'BACKUP_S3_SECRET_ACCESS_KEY']) {
      if (!e[v]) throw new DrillError(`${v} is not set (the BACKUP_S3_* variables go together)`);
    }
    return store({ endpoint: e.BACKUP_S3_ENDPOINT.replace(/\/+$/, ''), region: e.BACKUP_S3_REGION || 'us-east-1', accessKeyId: e.BACKUP_S3_ACCESS_KEY_ID, secretAccessKey: e.BACKUP_S3_SECRET_ACCESS_KEY }, e.BACKUP_S3_BUCKET, async () => undefined);
  }
  const s3 = await startTestS3();
  say(`started versitygw on ${s3.endpoint}`);
  return store(s3, await s3.createBucket('secsvc-backups'), () => s3.stop());
}

function store(s, bucket, stop) {
  hidden.add(s.secretAccessKey);
  const client = new S3Client({ region: s.region, endpoint: s.endpoint, forcePathStyle: true, credentials: { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey } });
  return {
    bucket,
    /** The S3(...) table function's arguments for a folder of the bucket (the secret inside: never logged). */
    clickhouseTarget: (folder) => `S3('${s.endpoint}/${bucket}/${folder}/', '${s.accessKeyId}', '${s.secretAccessKey}')`,
    async upload(key, file) {
      const { size } = await fs.stat(file);
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: createReadStream(file), ContentLength: size }));
    },
    async download(key, file) {
      const { Body } = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      await pipeline(Body, createWriteStream(file));
    },
    async list(prefix) {
      const keys = [];
      let token;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
        for (const o of page.Contents ?? []) keys.push(o.Key);
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      return keys;
    },
    close: async () => {
      client.destroy();
      await stop();
    },
  };
}

// ---- what a copy holds: row counts and checksums ----

/**
 * Every table of every database of the PostgreSQL server at `url(db)`: its row count and the MD5 of its rows'
 * text, sorted (so physical order does not matter, any changed, missing or extra row does).
 */
async function postgresFacts(url) {
  const facts = {};
  const admin = new pg.Client({ connectionString: url('postgres') });
  await admin.connect();
  const { rows: dbs } = await admin.query('SELECT datname FROM pg_database WHERE NOT datistemplate ORDER BY datname').finally(() => admin.end());
  for (const { datname } of dbs) {
    const client = new pg.Client({ connectionString: url(datname) });
    await client.connect();
    try {
      const { rows: tables } = await client.query(
        `SELECT format('%I.%I', table_schema, table_name) AS name FROM information_schema.tables
         WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1`,
      );
      for (const { name } of tables) {
        const { rows } = await client.query(`SELECT count(*)::bigint AS n, md5(coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), '')) AS sum FROM ${name} t`);
        facts[`${datname}/${name}`] = { rows: Number(rows[0].n), checksum: rows[0].sum };
      }
    } finally {
      await client.end();
    }
  }
  return facts;
}

const chQuery = async (ch, query, params = {}) => (await ch.query({ query, query_params: params, format: 'JSONEachRow' })).json();

/**
 * Every table of the ClickHouse database: rows (after FINAL for the replacing engines, whose duplicates a merge
 * may collapse at any time) and the sum of each row's hash.
 */
async function clickhouseFacts(ch) {
  const q = (query, params) => chQuery(ch, query, params);
  const facts = {};
  const tables = await q(`SELECT name, engine FROM system.tables WHERE database = {db:String} AND NOT is_temporary AND engine LIKE '%MergeTree' ORDER BY name`, { db: CH_DATABASE });
  for (const { name, engine } of tables) {
    const final = /Replacing|Collapsing|Summing|Aggregating/.test(engine) ? 'FINAL' : '';
    const [r] = await q(`SELECT count() AS n, toString(sum(cityHash64(toString(tuple(*))))) AS sum FROM ${CH_DATABASE}.${name} ${final}`);
    facts[`${CH_DATABASE}.${name}`] = { rows: Number(r.n), checksum: r.sum };
  }
  return facts;
}

/** The audit log of each environment: its entries and last chain position. */
async function auditFacts(ch) {
  const facts = {};
  const [log] = await chQuery(ch, `SELECT count() AS n FROM system.tables WHERE database = {db:String} AND name = 'audit_logs'`, { db: CH_DATABASE });
  if (Number(log.n) === 0) return facts;
  for (const r of await chQuery(ch, `SELECT environment, count() AS n, max(chain_seq) AS last FROM ${CH_DATABASE}.audit_logs FINAL GROUP BY environment ORDER BY environment`)) {
    facts[r.environment] = { rows: Number(r.n), checksum: `last chain position ${r.last}` };
  }
  return facts;
}

/** What a copy holds (the backup's source, or the restored copy). */
async function facts(url, ch) {
  return { postgres: await postgresFacts(url), clickhouse: await clickhouseFacts(ch), audit: await auditFacts(ch) };
}

/** The differences between what the backup held and what the restored copy holds, one line each. */
function compareFacts(expected, actual) {
  const problems = [];
  for (const [kind, want] of Object.entries(expected)) {
    const got = actual[kind] ?? {};
    for (const name of new Set([...Object.keys(want), ...Object.keys(got)])) {
      const w = want[name];
      const g = got[name];
      if (!w) problems.push(`${kind} ${name}: not in the backup, ${g.rows} rows in the restored copy`);
      else if (!g) problems.push(`${kind} ${name}: missing from the restored copy (${w.rows} rows backed up)`);
      else if (w.rows !== g.rows) problems.push(`${kind} ${name}: ${w.rows} rows backed up, ${g.rows} restored`);
      else if (w.checksum !== g.checksum) problems.push(`${kind} ${name}: same row count (${w.rows}), different content`);
    }
  }
  return problems;
}

// ---- the steps ----

async function backup({ dataDir, drillDir, s3, prefix }) {
  const pgData = path.join(dataDir, 'postgres');
  const chPath = path.join(dataDir, 'clickhouse');
  if (!existsSync(path.join(pgData, 'PG_VERSION')) || !existsSync(chPath)) {
    throw new DrillError(`${dataDir} is not a local profile data directory (no postgres/ and clickhouse/ in it)`);
  }
  const pid = runningPostmaster(pgData);
  if (pid) throw new DrillError(`PostgreSQL (pid ${pid}) runs on ${pgData}: stop the local stack first (embedded ClickHouse admits one process)`);
  const secrets = await loadStackSecrets(dataDir);

  let ch;
  try {
    ch = await openClickHouse({ path: chPath });
    await ch.ping();
  } catch (err) {
    throw new DrillError(`cannot open the embedded ClickHouse at ${chPath} (is the audit service still running?): ${err.message.split('\n')[0]}`);
  }
  const server = await startEmbeddedPostgres({ dataDir: pgData, port: await freePort(), password: secrets.postgresPassword });
  try {
    const source = await facts(server.url, ch);

    const out = path.join(drillDir, 'backup');
    await fs.mkdir(out, { recursive: true });
    say(`pg_basebackup of ${pgData}`);
    await run(
      tool('pg_basebackup'),
      ['-h', '127.0.0.1', '-p', String(server.port), '-U', 'secsvc', '-D', path.join(out, 'postgres'), '-F', 'tar', '-z', '-X', 'stream', '-c', 'fast', '--manifest-checksums=SHA256', '-l', prefix, '-w'],
      { env: { PATH: process.env.PATH, PGPASSWORD: secrets.postgresPassword } },
    );
    for (const file of await fs.readdir(path.join(out, 'postgres'))) await s3.upload(`${prefix}/postgres/${file}`, path.join(out, 'postgres', file));

    say(`BACKUP DATABASE ${CH_DATABASE} TO S3 (${s3.bucket}/${prefix}/clickhouse/)`);
    const [status] = await (await ch.query({ query: `BACKUP DATABASE ${CH_DATABASE} TO ${s3.clickhouseTarget(`${prefix}/clickhouse`)}`, format: 'JSONEachRow' })).json();
    if (status?.status !== 'BACKUP_CREATED') throw new DrillError(`ClickHouse backup ended ${status?.status}`);

    await fs.writeFile(path.join(out, 'facts.json'), JSON.stringify(source, null, 2));
    await s3.upload(`${prefix}/facts.json`, path.join(out, 'facts.json'));
    return source;
  } finally {
    await server.stop();
    await ch.close();
  }
}

async function restore({ dataDir, drillDir, s3, prefix }) {
  const into = path.join(drillDir, 'restored');
  const fetched = path.join(drillDir, 'fetched');
  await fs.mkdir(path.join(fetched, 'postgres'), { recursive: true });
  await fs.mkdir(into, { recursive: true, mode: 0o711 });
  await fs.chmod(into, 0o711);

  const files = await s3.list(`${prefix}/postgres/`);
  if (files.length === 0) throw new DrillError(`no PostgreSQL backup under ${s3.bucket}/${prefix}/postgres/`);
  for (const key of files) await s3.download(key, path.join(fetched, 'postgres', path.basename(key)));
  await s3.download(`${prefix}/facts.json`, path.join(drillDir, 'expected.json'));
  say('pg_verifybackup of the downloaded base backup');
  await run(tool('pg_verifybackup'), ['--no-parse-wal', path.join(fetched, 'postgres')]);

  // The base backup unpacked into a new data directory with the WAL it needs, then started: PostgreSQL
  // replays that WAL up to the backup's end (what a CNPG recovery does before it promotes).
  const pgData = path.join(into, 'postgres');
  await fs.mkdir(pgData, { mode: 0o700 });
  await run('tar', ['-xzf', path.join(fetched, 'postgres', 'base.tar.gz'), '-C', pgData]);
  await run('tar', ['-xzf', path.join(fetched, 'postgres', 'pg_wal.tar.gz'), '-C', path.join(pgData, 'pg_wal')]);
  const owner = await postgresOwner();
  if (owner) await run('chown', ['-R', `${owner.uid}:${owner.gid}`, pgData]);
  await fs.chmod(pgData, 0o700);
  // The Kubernetes Secret's part (SERVER_SECRET, the database password): kept apart from the data backups.
  await fs.copyFile(path.join(dataDir, 'secrets.json'), path.join(into, 'secrets.json'));

  say(`RESTORE DATABASE ${CH_DATABASE} FROM S3 into ${path.join(into, 'clickhouse')}`);
  const ch = await openClickHouse({ path: path.join(into, 'clickhouse') });
  try {
    const [status] = await (await ch.query({ query: `RESTORE DATABASE ${CH_DATABASE} FROM ${s3.clickhouseTarget(`${prefix}/clickhouse`)}`, format: 'JSONEachRow' })).json();
    if (status?.status !== 'RESTORED') throw new DrillError(`ClickHouse restore ended ${status?.status}`);
  } finally {
    await ch.close();
  }
}

/**
 * Compares the restored copy in `drillDir` with expected.json (the source's facts at backup time) and verifies
 * every environment's audit chain across the restored PostgreSQL (heads, signed checkpoints) and ClickHouse
 * (entries). Returns the problems found (none: the restore is good).
 */
async function check(drillDir) {
  const into = path.join(drillDir, 'restored');
  const expected = JSON.parse(await fs.readFile(path.join(drillDir, 'expected.json'), 'utf8'));
  const secrets = await loadStackSecrets(into);
  const server = await startEmbeddedPostgres({ dataDir: path.join(into, 'postgres'), port: await freePort(), password: secrets.postgresPassword });
  const ch = await openClickHouse({ path: path.join(into, 'clickhouse') });
  const pool = createPool(server.url('secsvc'), 2, undefined, 'audit');
  try {
    const actual = await facts(server.url, ch);
    const problems = compareFacts(expected, actual);
    const count = (f) => `${Object.keys(f).length} tables, ${Object.values(f).reduce((n, t) => n + t.rows, 0)} rows`;
    say(`restored postgres: ${count(actual.postgres)}; clickhouse: ${count(actual.clickhouse)}`);

    const { rows: heads } = await pool.query(`SELECT environment FROM audit_chain_heads ORDER BY environment`).catch(() => ({ rows: [] }));
    const chain = new AuditChain(pool, ch, ChainKey.fromSecret(secrets.serverSecret));
    for (const { environment } of heads) {
      const v = await chain.verify(environment);
      say(`audit chain ${environment}: ${v.intact ? 'intact' : 'BROKEN'}, ${v.entriesChecked} entries and ${v.checkpointsChecked} checkpoints checked, head ${v.head.position}`);
      if (!v.intact) problems.push(`audit chain ${environment}: breaks at position ${v.firstBreak.position} (${v.firstBreak.reason}${v.firstBreak.id ? `, ${v.firstBreak.id}` : ''})`);
    }
    return problems;
  } finally {
    await pool.end();
    await ch.close();
    await server.stop();
  }
}

async function drill() {
  const dataDir = path.resolve(process.env.DATA_DIR || path.join(rootDir, '.data'));
  const drillDir = path.resolve(process.env.DRILL_DIR || (await fs.mkdtemp(path.join(os.tmpdir(), 'secsvc-drill-'))));
  if (existsSync(path.join(drillDir, 'restored'))) throw new DrillError(`${drillDir} holds a restored copy already: give DRILL_DIR a new or empty folder`);
  await fs.mkdir(drillDir, { recursive: true, mode: 0o711 });
  await fs.chmod(drillDir, 0o711);
  const prefix = `drill-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  const s3 = await openStore();
  try {
    const started = Date.now();
    await backup({ dataDir, drillDir, s3, prefix });
    say(`backed up into ${s3.bucket}/${prefix}/ in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const restoring = Date.now();
    await restore({ dataDir, drillDir, s3, prefix });
    say(`restored into ${path.join(drillDir, 'restored')} in ${((Date.now() - restoring) / 1000).toFixed(1)} s`);
  } finally {
    await s3.close();
  }
  return drillDir;
}

async function main() {
  const [command, arg] = process.argv.slice(2);
  let drillDir;
  if (command === 'check') {
    if (!arg) throw new DrillError('usage: node scripts/backup-restore-drill.js check <drill dir>');
    drillDir = path.resolve(arg);
  } else if (command === undefined) {
    drillDir = await drill();
  } else {
    throw new DrillError('usage: npm run drill:restore | node scripts/backup-restore-drill.js check <drill dir>');
  }
  const problems = await check(drillDir);
  for (const p of problems) say(`MISMATCH ${p}`);
  say(problems.length === 0 ? `the restored copy matches the backup (${drillDir})` : `${problems.length} difference(s) (${drillDir})`);
  process.stdout.write(JSON.stringify({ drillDir, ok: problems.length === 0, problems }) + '\n');
  return problems.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    say(err instanceof DrillError ? err.message : err.stack);
    process.exit(2);
  },
);
