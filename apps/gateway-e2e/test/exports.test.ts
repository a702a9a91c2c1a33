/**
 * Log exports end to end: the whole local stack as processes. 50,000 events are published on the event bus
 * (as the outbox relays do), ingested by the audit consumer into embedded ClickHouse, exported by the export
 * worker (rows through audit's StreamLogs) into the local object store, and downloaded from the gateway's
 * download host; a worker killed mid-export; tampered and expired links; Range requests; log.export.* events.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { events } from '@secsvc/proto';
import { AUTH_EVENTS_TOPIC, createLogger, createPostgresBus } from '@secsvc/shared';
import type { LocalStack } from '@secsvc/dev/stack';
import { eventually, startTestStack, type Api } from './support';

jest.setTimeout(300_000);

const KEY = 'svc_sk_' + 'exportE2eTests'.repeat(3);
const SCRIPT = path.resolve(__dirname, '../../../scripts/verify-export.js');
const N = 50_000;
let stack: LocalStack;
let api: Api;
let stop: () => Promise<void>;
let db: pg.Client;
const base = Date.now() - 3_600_000;
const window = { from: new Date(base - 1000).toISOString(), to: new Date(base + 3_000_000).toISOString() };

beforeAll(async () => {
  ({ stack, api, stop } = await startTestStack('exports', KEY, {
    // A killed worker's job is taken over after 3 s; small pages make an export last long enough to kill it.
    EXPORT_LEASE_SECONDS: '3',
    EXPORT_PAGE_SIZE: '500',
    EXPORT_RETRY_DELAY_SECONDS: '0',
    EXPORT_CLEANUP_INTERVAL_SECONDS: '1',
    EXPORT_POLL_MS: '200',
  }));
  db = new pg.Client({ connectionString: stack.databaseUrl });
  await db.connect();
  // The events, as the producing services' outbox relays publish them.
  const bus = await createPostgresBus({ url: stack.databaseUrl, logger: createLogger('e2e', 'silent') });
  for (let start = 0; start < N; start += 5_000) {
    const records = [];
    for (let i = start; i < Math.min(N, start + 5_000); i++) {
      const e: events.AuthEvent = {
        id: `log_01jd${String(i).padStart(22, '0')}`,
        environment: 'live',
        type: i % 2 ? 'user.login' : 'user.logout',
        timestamp: new Date(base + i * 50).toISOString(),
        actor: { id: `user_${i % 100}`, email: i % 1000 === 0 ? `=HYPERLINK("http://evil/${i}")@x.com` : `u${i % 100}@example.com`, type: 'user' },
        target: { id: `ses_${i}`, type: 'session' },
        context: { ip: '10.1.2.3', userAgent: 'exportagent, "e2e"' },
        result: i % 10 ? 'success' : 'failure',
        traceId: `req_${i}`,
        metadataJson: JSON.stringify({ authMethod: 'password', mfaUsed: i % 3 === 0 }),
      };
      records.push({ id: e.id, key: e.actor!.id!, value: JSON.stringify(events.AuthEvent.toJSON(e)) });
    }
    await bus.publish(AUTH_EVENTS_TOPIC, records);
  }
  await bus.close();
  await eventually(
    async () => (await api('POST', '/logs/search', { query: 'exportagent', ...window, limit: 1 })).body?.meta?.totalHits,
    (n) => n === N,
    120_000,
  );
});

afterAll(async () => {
  await db?.end();
  await stop?.();
});


// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON bodies, asserted field by field
type Json = any;
const completed = (id: string) => eventually(async () => (await api('GET', `/logs/export/${id}`)).body.data as Json, (d) => d.status !== 'processing', 120_000);

async function fetchBytes(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { headers });
  return { res, bytes: Buffer.from(await res.arrayBuffer()) };
}

describe('50,000-entry exports', () => {
  const done: Record<string, Json> = {};

  it.each(['csv', 'json'])('%s: 202 processing with a fast estimate, then completed with a link; the file matches its count, size and digest', async (format) => {
    const res = await api('POST', '/logs/export', { ...window, format });
    expect(res.status).toBe(202);
    expect(Object.keys(res.body.data).sort()).toEqual(['createdAt', 'estimatedRecords', 'exportId', 'format', 'status']);
    expect(res.body.data).toMatchObject({ status: 'processing', format, estimatedRecords: N });
    expect(res.body.data.exportId).toMatch(/^exp_[0-9a-z]{26}$/);
    const data = await completed(res.body.data.exportId);
    done[format] = data;
    expect(data).toMatchObject({ status: 'completed', format, totalRecords: N, estimatedRecords: N });
    expect(data.downloadUrl).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${stack.port}/downloads/${data.exportId}\\.${format}\\?token=[0-9a-z]+\\.[A-Za-z0-9_-]{43}$`));
    expect(Date.parse(data.expiresAt) - Date.parse(data.completedAt)).toBe(3_600_000);

    const { res: dl, bytes } = await fetchBytes(data.downloadUrl);
    expect(dl.status).toBe(200);
    expect(bytes.length).toBe(data.fileSizeBytes);
    expect(dl.headers.get('content-length')).toBe(String(data.fileSizeBytes));
    expect(dl.headers.get('content-disposition')).toBe(`attachment; filename="${data.exportId}.${format}"`);
    expect(dl.headers.get('content-type')).toBe(format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8');
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(data.sha256);
    const text = bytes.toString('utf8');
    if (format === 'csv') {
      const lines = text.split('\r\n');
      expect(lines.pop()).toBe('');
      expect(lines).toHaveLength(N + 1);
      expect(lines[0]!.split(',').slice(0, 6)).toEqual(['id', 'timestamp', 'event', 'actor.id', 'actor.email', 'actor.type']);
      // newest first; formula-looking cells neutralised; quotes and commas quoted
      expect(lines[1]!.startsWith(`log_01jd${String(N - 1).padStart(22, '0')},`)).toBe(true);
      const evil = lines.find((l) => l.startsWith(`log_01jd${String(49_000).padStart(22, '0')},`))!;
      expect(evil).toContain(`"'=HYPERLINK(""http://evil/49000"")@x.com"`);
      expect(evil).toContain('"exportagent, ""e2e"""');
    } else {
      const entries = JSON.parse(text) as Json[];
      expect(entries).toHaveLength(N);
      // Every entry is the SPEC full form, exactly as GET /logs/{id} shows it.
      for (const i of [0, 1, 12_345, N - 1]) {
        const one = await api('GET', `/logs/${entries[i].id}`);
        expect(entries[i]).toEqual(one.body.data);
      }
    }
  });

  it('carries a signed manifest that scripts/verify-export.js checks offline; a changed byte or manifest fails it', async () => {
    const data = done.csv;
    expect(data.manifest).toMatchObject({
      version: 1,
      exportId: data.exportId,
      environment: 'live',
      format: 'csv',
      file: { sha256: data.sha256, sizeBytes: data.fileSizeBytes, records: N },
      checkpoint: { environment: 'live', position: expect.any(Number), hash: expect.stringMatching(/^[0-9a-f]{64}$/) },
      kid: expect.stringMatching(/^ck_/),
    });
    // The same manifest on every read.
    expect((await api('GET', `/logs/export/${data.exportId}`)).body.data.manifest).toEqual(data.manifest);
    // The chain positions the file's entries were drawn from: that range of the log verifies intact.
    const { first, last } = data.manifest.positions;
    expect(last - first + 1).toBeGreaterThanOrEqual(N);
    const verdict = (await api('GET', `/logs/verify?from=${first}&to=${last}`)).body.data;
    expect(verdict).toMatchObject({ intact: true, from: first, to: last, entriesChecked: last - first + 1 });
    const dir = mkdtempSync(path.join(os.tmpdir(), 'verify-export-'));
    try {
      const { bytes } = await fetchBytes(data.downloadUrl);
      writeFileSync(path.join(dir, 'export.csv'), bytes);
      writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify(data.manifest));
      writeFileSync(path.join(dir, 'keys.json'), JSON.stringify((await api('GET', '/logs/keys')).body));
      const check = (file: string, manifest = 'manifest.json') =>
        spawnSync(process.execPath, [SCRIPT, path.join(dir, file), path.join(dir, manifest), path.join(dir, 'keys.json')], { encoding: 'utf8' });
      const ok = check('export.csv');
      expect([ok.status, ok.stdout]).toEqual([0, expect.stringMatching(new RegExp(`^intact: ${data.exportId} \\(live, csv\\), ${N} records`))]);
      const changed = Buffer.from(bytes);
      changed[changed.length - 5] ^= 1;
      writeFileSync(path.join(dir, 'changed.csv'), changed);
      const bad = check('changed.csv');
      expect([bad.status, bad.stderr]).toEqual([1, expect.stringContaining('SHA-256')]);
      writeFileSync(path.join(dir, 'forged.json'), JSON.stringify({ ...data.manifest, file: { ...data.manifest.file, sha256: createHash('sha256').update(changed).digest('hex') } }));
      const forged = check('changed.csv', 'forged.json');
      expect([forged.status, forged.stderr]).toEqual([1, expect.stringContaining('manifest signature does not verify')]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('serves byte ranges (206 with Content-Range) that match the whole file, HEAD, and 416 past the end', async () => {
    const data = done.csv;
    const { bytes: whole } = await fetchBytes(data.downloadUrl);
    const { res, bytes } = await fetchBytes(data.downloadUrl, { range: 'bytes=100-1099' });
    expect(res.status).toBe(206);
    expect(res.headers.get('content-range')).toBe(`bytes 100-1099/${data.fileSizeBytes}`);
    expect(bytes).toEqual(whole.subarray(100, 1100));
    const tail = await fetchBytes(data.downloadUrl, { range: 'bytes=-64' });
    expect(tail.bytes).toEqual(whole.subarray(whole.length - 64));
    const resumed = await fetchBytes(data.downloadUrl, { range: `bytes=${whole.length - 10}-` });
    expect(resumed.bytes).toEqual(whole.subarray(whole.length - 10));
    const head = await fetch(data.downloadUrl, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(data.fileSizeBytes));
    const past = await fetchBytes(data.downloadUrl, { range: `bytes=${whole.length}-` });
    expect(past.res.status).toBe(416);
    expect(past.res.headers.get('content-range')).toBe(`bytes */${data.fileSizeBytes}`);
    expect(JSON.parse(past.bytes.toString()).error.code).toBe('range_not_satisfiable');
  });

  it('refuses tampered tokens, another export or format, with 403 in the error shape and no bytes', async () => {
    const url = new URL(done.csv.downloadUrl);
    const token = url.searchParams.get('token')!;
    const flip = (t: string, i: number) => t.slice(0, i) + (t[i] === 'A' ? 'B' : 'A') + t.slice(i + 1);
    const variants = [
      `${url.origin}${url.pathname}?token=${flip(token, token.length - 3)}`,
      `${url.origin}${url.pathname}?token=${flip(token, 0)}`,
      `${url.origin}${url.pathname}`,
      `${url.origin}/downloads/${done.json.exportId}.json?token=${token}`,
      `${url.origin}${url.pathname.replace('.csv', '.json')}?token=${token}`,
    ];
    for (const v of variants) {
      const { res, bytes } = await fetchBytes(v);
      expect(res.status).toBe(403);
      const body = JSON.parse(bytes.toString());
      expect(body.error.code).toBe('forbidden');
      expect(body.meta.requestId).toMatch(/^req_/);
      expect(bytes.toString()).not.toContain('log_01jd');
    }
  });

  it('an expired link is refused; the cleanup loop deletes the file and the export shows expired', async () => {
    // u7@example.com: every 100th entry from 7 on, all of them logins (odd numbers)
    const exp = (await api('POST', '/logs/export', { ...window, format: 'ndjson', events: ['user.login'], query: 'u7' })).body.data;
    const data = await completed(exp.exportId);
    expect(data.totalRecords).toBe(N / 100);
    const live = await fetchBytes(data.downloadUrl);
    expect(live.res.status).toBe(200);
    expect(live.bytes.toString().trimEnd().split('\n')).toHaveLength(N / 100);
    // The link's end comes (as if an hour had passed): the service itself signs the now-expired link...
    await db.query(`UPDATE audit.export_jobs SET expires_at = now() - interval '1 second' WHERE id = $1`, [exp.exportId]);
    const after = await api('GET', `/logs/export/${exp.exportId}`);
    const { res, bytes } = await fetchBytes(after.body.data.downloadUrl ?? data.downloadUrl);
    expect(res.status).toBe(403);
    expect(JSON.parse(bytes.toString()).error.message).toMatch(/expired/);
    // ...and the cleanup loop removes the file.
    const gone = await eventually(async () => (await api('GET', `/logs/export/${exp.exportId}`)).body.data, (d: Json) => d.status === 'expired', 30_000);
    expect(gone.downloadUrl).toBeUndefined();
    expect((await fetchBytes(data.downloadUrl)).res.status).toBe(403);
  });

  it('a worker killed mid-export: another takes the job over after the lease and it completes exactly once', async () => {
    const exp = (await api('POST', '/logs/export', { ...window, format: 'csv' })).body.data;
    // Kill the worker as soon as it holds the job (an export of 50,000 rows in pages of 500 takes longer).
    await eventually(async () => (await db.query(`SELECT lease_token FROM audit.export_jobs WHERE id = $1`, [exp.exportId])).rows[0]?.lease_token, (t) => !!t, 30_000);
    await stack.restart('export-worker', 'SIGKILL');
    const data = await completed(exp.exportId);
    expect(data).toMatchObject({ status: 'completed', totalRecords: N });
    const row = (await db.query(`SELECT attempts, object_key FROM audit.export_jobs WHERE id = $1`, [exp.exportId])).rows[0];
    expect(row.attempts).toBe(2);
    expect(row.object_key).toBe(`live/${exp.exportId}/2.csv`);
    const { bytes } = await fetchBytes(data.downloadUrl);
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(data.sha256);
    expect(bytes.toString().split('\r\n')).toHaveLength(N + 2);
    // One completion event for it, through the audit outbox, bus and consumer into the log itself.
    const completions = await eventually(
      async () => (await api('GET', `/logs?limit=100&events=log.export.completed&${new URLSearchParams({ from: new Date(Date.now() - 600_000).toISOString() })}`)).body.data.filter((e: Json) => e.target?.id === exp.exportId),
      (es: Json[]) => es.length >= 1,
    );
    await new Promise((r) => setTimeout(r, 2000));
    const again = (await api('GET', `/logs?limit=100&events=log.export.completed&${new URLSearchParams({ from: new Date(Date.now() - 600_000).toISOString() })}`)).body.data.filter((e: Json) => e.target?.id === exp.exportId);
    expect(completions).toHaveLength(1);
    expect(again).toHaveLength(1);
  });

  it('records log.export.created, completed and downloaded in the audit log, with the export as target', async () => {
    const id = done.csv.exportId;
    const kinds = await eventually(
      async () => {
        const res = await api('GET', `/logs?limit=100&events=log.export.created,log.export.completed,log.export.downloaded&${new URLSearchParams({ from: new Date(Date.now() - 900_000).toISOString() })}`);
        return (res.body.data as Json[]).filter((e) => e.target?.id === id).map((e) => e.event).sort();
      },
      (k: string[]) => k.includes('log.export.created') && k.includes('log.export.completed') && k.includes('log.export.downloaded'),
    );
    expect(new Set(kinds)).toEqual(new Set(['log.export.created', 'log.export.completed', 'log.export.downloaded']));
  });

  it('exports are scoped to the environment, and bad requests name the field', async () => {
    const testKey = (await api('POST', '/api-keys', { name: 'test env', type: 'test' })).body.data.key;
    const res = await fetch(`${stack.baseUrl}/logs/export/${done.csv.exportId}`, { headers: { authorization: `Bearer ${testKey}` } });
    expect(res.status).toBe(404);
    const bad = await api('POST', '/logs/export', { from: window.to, to: window.from, format: 'csv' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].field).toBe('to');
    const tooLong = await api('POST', '/logs/export', { from: '2020-01-01T00:00:00Z', to: '2026-01-01T00:00:00Z', format: 'csv' });
    expect(tooLong.body.error.details[0]).toMatchObject({ field: 'to' });
    expect((await api('POST', '/logs/export', { ...window, format: 'xlsx' })).body.error.details[0].field).toBe('format');
  });
});
