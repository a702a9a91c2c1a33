/** Export pages over embedded ClickHouse (chdb): every matching row once, newest first, in bounded pages. */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { openClickHouse, type ClickHouseClient } from '../src/clickhouse';
import { decodeRowPage, decodeRows, exportPages, splitLines } from '../src/export-source';
import { rowFromEvent, type LogRow } from '../src/rows';
import { migrateClickHouse } from '../src/schema';
import { LogStore } from '../src/store';

let dir: string;
let ch: ClickHouseClient;
const rows: LogRow[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'secsvc-ch-export-'));
  ch = await openClickHouse({ path: dir });
  await migrateClickHouse(ch);
  for (let i = 0; i < 2_500; i++) {
    rows.push(
      rowFromEvent(
        {
          id: `log_01jd${String(i).padStart(22, '0')}`,
          environment: i % 10 === 9 ? 'test' : 'live',
          type: i % 3 ? 'user.login' : 'user.logout',
          // Several rows share a millisecond: the keyset must still visit each once.
          timestamp: new Date(Date.UTC(2026, 10, 1, 0, 0, 0) + Math.floor(i / 3)).toISOString(),
          actor: { id: `user_${i % 5}`, email: i % 5 === 0 ? 'alice@example.com' : `u${i % 5}@example.com`, type: 'user' },
          target: i % 2 ? { id: `ses_${i}`, type: 'session' } : undefined,
          context: { ip: '81.2.69.142', userAgent: i === 7 ? 'line\nbreak, "quoted" =cmd' : i === 8 ? "tab\there back\\slash \0 nul \r cr \b\f \\N é😀 'q' \\t" : 'jest' },
          result: i % 4 ? 'success' : 'failure',
          traceId: `req_${i}`,
          metadataJson: JSON.stringify({ authMethod: 'password', mfaUsed: i % 2 === 0, n: i }),
        },
        i % 2 ? { city: 'London', country: 'GB', region: 'England', lat: 51.5, lng: -0.12 } : undefined,
      ),
    );
  }
  await new LogStore(ch).insert(rows);
}, 60_000);
afterAll(async () => {
  await ch.close();
  await rm(dir, { recursive: true, force: true });
});

const spec = { environment: 'live', from: '2026-11-01T00:00:00.000Z', to: '2026-11-02T00:00:00.000Z', events: [] as string[], query: '' };

async function collect(s: typeof spec, pageSize: number) {
  const out: LogRow[] = [];
  const sizes: number[] = [];
  for await (const page of exportPages(ch, s, pageSize)) {
    const decoded = decodeRowPage(page.text);
    expect(decoded).toHaveLength(page.count);
    // The same rows from the page's bytes (as a gRPC message carries them), line by line.
    expect([...decodeRows(Buffer.from(page.text))]).toEqual(decoded);
    sizes.push(page.count);
    out.push(...decoded);
  }
  return { out, sizes };
}

const newestFirst = (a: LogRow, b: LogRow) => (a.timestamp === b.timestamp ? (a.id < b.id ? 1 : -1) : a.timestamp < b.timestamp ? 1 : -1);

test('every row of the environment and window once, newest first, identical to what was stored, in pages of at most pageSize', async () => {
  const { out, sizes } = await collect(spec, 400);
  const expected = rows.filter((r) => r.environment === 'live').sort(newestFirst);
  expect(out).toEqual(expected);
  expect(Math.max(...sizes)).toBe(400);
  expect(sizes.length).toBe(Math.ceil(expected.length / 400));
});

test('events, the time window and a search query narrow the export', async () => {
  const { out } = await collect({ ...spec, events: ['user.logout'], to: '2026-11-01T00:00:00.500Z', query: 'alice' }, 100);
  const expected = rows
    .filter((r) => r.environment === 'live' && r.event === 'user.logout' && r.timestamp < '2026-11-01T00:00:00.500Z' && r.actor_email === 'alice@example.com')
    .sort(newestFirst);
  expect(expected.length).toBeGreaterThan(10);
  expect(out).toEqual(expected);
});

test('an empty window yields no page; a page exactly filled ends with an empty read', async () => {
  expect((await collect({ ...spec, from: '2027-01-01T00:00:00.000Z', to: '2027-01-02T00:00:00.000Z' }, 100)).sizes).toEqual([]);
  const total = rows.filter((r) => r.environment === 'live').length;
  expect((await collect(spec, total)).sizes).toEqual([total]);
});

test('splitLines cuts at line ends only, into pieces of bounded size', () => {
  const text = Array.from({ length: 50 }, (_, i) => `["row ${i}", "${'x'.repeat(i)}"]\n`).join('');
  const pieces = splitLines(text, 200);
  expect(pieces.join('')).toBe(text);
  for (const p of pieces) {
    expect(p.endsWith('\n')).toBe(true);
    expect(p.length <= 200 || !p.slice(0, -1).includes('\n')).toBe(true);
  }
  expect(splitLines('', 10)).toEqual([]);
  expect(splitLines('["one very long line"]\n', 5)).toEqual(['["one very long line"]\n']);
});
