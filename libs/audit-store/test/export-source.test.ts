/**
 * Export pages over embedded ClickHouse (chdb): every matching row once, newest first, in bounded pages, each
 * entry rendered by ClickHouse (export-render.ts) exactly as the independent references say: the SPEC full form
 * built in JavaScript (the worker's fullForm) for JSON and NDJSON, an RFC 4180 reader and the expected text of
 * every field for CSV.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { csvCell, entryEnd } from '../../../apps/export-worker/src/formats';
import { parseCsv } from '../../../apps/export-worker/test/support/csv';
import { fullForm } from '../../../apps/export-worker/test/support/full-form';
import { openClickHouse, type ClickHouseClient } from '../src/clickhouse';
import type { ExportFormat } from '../src/export-jobs';
import { CSV_COLUMNS, csvCellSql, FILE_FRAMES, RENDER_SETTINGS } from '../src/export-render';
import { exportPages, RenderedRows, scanRows, type RenderedPage } from '../src/export-source';
import { rowFromEvent, type LogRow } from '../src/rows';
import { LOG_TABLE, migrateClickHouse } from '../src/schema';
import { LogStore } from '../src/store';
import { rowBinary } from './support/row-binary';

let dir: string;
let ch: ClickHouseClient;
const rows: LogRow[] = [];
/** The rows of the hostile-rendering tests (stored on 2026-11-05, outside the window of the others). */
let hostileStored: LogRow[] = [];
/** Chain positions given at insert (live rows only; test rows are unchained). */
const positions = new Map<string, number>();

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
  let live = 0;
  for (const r of rows) if (r.environment === 'live') positions.set(r.id, ++live);
  await new LogStore(ch).write(rows.map((row) => ({ row, position: positions.get(row.id) ?? 0, hash: '', link: 0 })));
  hostileStored = hostileRows();
  await new LogStore(ch).insert(hostileStored);
}, 60_000);
afterAll(async () => {
  await ch.close();
  await rm(dir, { recursive: true, force: true });
});

const spec = { environment: 'live', from: '2026-11-01T00:00:00.000Z', to: '2026-11-02T00:00:00.000Z', events: [] as string[], query: '' };

/** One row of a page as RenderedRows reads it. */
interface Rendered {
  seq: number;
  ms: number;
  id: string;
  entry: string;
  meta: string;
}

function readRows(page: RenderedPage): Rendered[] {
  const r = new RenderedRows(page.bytes);
  const out: Rendered[] = [];
  while (r.next()) {
    const text = (a: number, b: number) => page.bytes.toString('utf8', a, b);
    out.push({ seq: r.seq, ms: r.ms, id: text(r.idStart, r.idEnd), entry: text(r.entryStart, r.entryEnd), meta: text(r.metaStart, r.metaEnd) });
  }
  return out;
}

/** Every page of an export, each checked to read back whole (and the same when cut into runs by scanRows). */
async function collect(s: typeof spec, format: ExportFormat, pageSize: number, checkRuns = true) {
  const out: Rendered[] = [];
  const sizes: number[] = [];
  for await (const page of exportPages(ch, s, format, pageSize)) {
    const got = readRows(page);
    expect(got).toHaveLength(page.count);
    // Cut into runs as the audit service sends them: whole rows, the same rows, in order.
    for (const max of checkRuns ? [1, 700, 64 * 1024] : []) {
      const runs = scanRows(page.bytes, max).runs;
      expect(Buffer.concat(runs.map((x) => x.bytes))).toEqual(page.bytes);
      expect(runs.flatMap(readRows)).toEqual(got);
      for (const run of runs) {
        expect(readRows(run)).toHaveLength(run.count);
        expect(run.bytes.length <= max || run.count === 1).toBe(true);
      }
    }
    sizes.push(page.count);
    out.push(...got);
  }
  return { out, sizes };
}

/** An entry as the worker ends it (export-file.ts): with its metadata from the memo. */
const ends = { csv: entryEnd('csv'), json: entryEnd('json'), ndjson: entryEnd('ndjson') };
function whole(format: ExportFormat, x: Rendered): string {
  const meta = Buffer.from(x.meta);
  return x.entry + ends[format](meta, 0, meta.length).toString();
}

const newestFirst = (a: LogRow, b: LogRow) => (a.timestamp === b.timestamp ? (a.id < b.id ? 1 : -1) : a.timestamp < b.timestamp ? 1 : -1);

/** Cells a spreadsheet would run as a formula (OWASP): the reference's own copy of the rule. */
const guard = (v: string) => (/^[=+\-@\t\r]/.test(v) ? `'${v}` : v);

/** What each of a CSV record's cells should read (after RFC 4180 unquoting), from the stored row. */
function expectedCsvCells(r: LogRow): string[] {
  const located = r.lat !== null && r.lng !== null;
  const text = [r.id, r.timestamp, r.event, r.actor_id, r.actor_email, r.actor_type, r.actor_name, r.target_id, r.target_id ? r.target_type : '', r.ip, r.user_agent];
  const location = located ? [guard(r.city), guard(r.country), guard(r.region), String(r.lat), String(r.lng)] : ['', '', '', '', ''];
  let meta: unknown;
  try {
    meta = JSON.parse(r.metadata);
  } catch {
    meta = {};
  }
  const { authMethod, mfaUsed, ...other } = meta && typeof meta === 'object' && !Array.isArray(meta) ? (meta as Record<string, unknown>) : {};
  return [
    ...text.map(guard),
    ...location,
    guard(r.result),
    guard(r.trace_id),
    authMethod === undefined ? '' : guard(String(authMethod)),
    mfaUsed === undefined ? '' : guard(String(mfaUsed)),
    Object.keys(other).length ? JSON.stringify(other) : '',
  ];
}

/** A rendered entry checked against the references for its format. */
function checkEntry(format: ExportFormat, got: Rendered, r: LogRow) {
  expect(got.id).toBe(r.id);
  expect(got.ms).toBe(Date.parse(r.timestamp));
  if (format === 'csv') {
    expect(got.meta).toBe(r.metadata);
    expect(got.entry.endsWith(',')).toBe(true);
    const records = parseCsv(whole(format, got));
    expect(records).toHaveLength(1);
    expect(records[0]).toHaveLength(CSV_COLUMNS.length);
    expect(Object.fromEntries(CSV_COLUMNS.map((c, i) => [c, records[0]![i]]))).toEqual(Object.fromEntries(CSV_COLUMNS.map((c, i) => [c, expectedCsvCells(r)[i]])));
    // Byte for byte what the worker's csvCell (the same rule, in JavaScript) writes; numbers as they are, unquoted.
    const located = r.lat !== null && r.lng !== null;
    const cells = [r.id, r.timestamp, r.event, r.actor_id, r.actor_email, r.actor_type, r.actor_name, r.target_id, r.target_id ? r.target_type : '', r.ip, r.user_agent].map(csvCell);
    const location = located ? [...[r.city, r.country, r.region].map(csvCell), String(r.lat), String(r.lng)] : ['', '', '', '', ''];
    expect(got.entry).toBe([...cells, ...location, csvCell(r.result), csvCell(r.trace_id), ''].join(','));
    if (located) expect(got.entry).toContain(`,${r.lat},${r.lng},`);
    return;
  }
  expect(got.meta).toBe(r.metadata);
  expect(got.entry.endsWith(',"metadata":')).toBe(true);
  let json = whole(format, got);
  if (format === 'ndjson') {
    // One line per entry: the only line break is the one ending it.
    expect(json.indexOf('\n')).toBe(json.length - 1);
    json = json.slice(0, -1);
  }
  expect(json).not.toMatch(/[\n\r]/);
  const parsed: unknown = JSON.parse(json);
  expect(parsed).toEqual(fullForm(r));
  // The SPEC's field order too.
  expect(JSON.stringify(parsed)).toBe(JSON.stringify(fullForm(r)));
}

describe.each(['json', 'ndjson', 'csv'] as const)('%s', (format) => {
  test('every row of the environment and window once, newest first, rendered as the reference says, in pages of at most pageSize', async () => {
    const { out, sizes } = await collect(spec, format, 400);
    const expected = rows.filter((r) => r.environment === 'live').sort(newestFirst);
    expect(out.map((x) => x.id)).toEqual(expected.map((r) => r.id));
    expect(out.map((x) => x.seq)).toEqual(expected.map((r) => positions.get(r.id)));
    for (const [i, r] of expected.entries()) checkEntry(format, out[i]!, r);
    expect(Math.max(...sizes)).toBe(400);
    expect(sizes.length).toBe(Math.ceil(expected.length / 400));
  });
});

test('an entry with nothing to escape is written by the plain path byte for byte as JSON.stringify writes its full form', async () => {
  const { out } = await collect(spec, 'json', 1_000, false);
  const byId = new Map(rows.map((r) => [r.id, r]));
  const plain = out.filter((x) => !['log_01jd0000000000000000000007', 'log_01jd0000000000000000000008'].includes(x.id));
  expect(plain.length).toBe(out.length - 2);
  for (const x of plain) expect(whole('json', x)).toBe(JSON.stringify(fullForm(byId.get(x.id)!)));
});

test('events, the time window and a search query narrow the export', async () => {
  const { out } = await collect({ ...spec, events: ['user.logout'], to: '2026-11-01T00:00:00.500Z', query: 'alice' }, 'csv', 100);
  const expected = rows
    .filter((r) => r.environment === 'live' && r.event === 'user.logout' && r.timestamp < '2026-11-01T00:00:00.500Z' && r.actor_email === 'alice@example.com')
    .sort(newestFirst);
  expect(expected.length).toBeGreaterThan(10);
  expect(out.map((x) => x.id)).toEqual(expected.map((r) => r.id));
  for (const [i, r] of expected.entries()) checkEntry('csv', out[i]!, r);
});

test('an empty window yields no page; a page exactly filled ends with an empty read', async () => {
  expect((await collect({ ...spec, from: '2027-01-01T00:00:00.000Z', to: '2027-01-02T00:00:00.000Z' }, 'json', 100)).sizes).toEqual([]);
  const total = rows.filter((r) => r.environment === 'live').length;
  expect((await collect(spec, 'ndjson', total, false)).sizes).toEqual([total]);
});

// ---- rendering of hostile rows: every format against the references ----

const HOSTILE_AT = Date.UTC(2026, 10, 5);
const hostileSpec = { ...spec, from: '2026-11-05T00:00:00.000Z', to: '2026-11-06T00:00:00.000Z' };
/** Text that CSV or JSON must escape, or a spreadsheet would run, and text that looks so but is not. */
const HOSTILE = [
  '=cmd|"/c calc"!A1', '=', '+1', '-1', '-', '@SUM(A1)', '\tlead tab', '\rlead cr', '\nlead lf', '"', '""', '', 'a,b', ',', 'trailing,', 'say "hi"',
  'line\nbreak', 'crlf\r\nx', 'mid\rcr', 'tab\tmid', 'back\\slash', 'nul\0byte', '\b\f\v\x1b\x1f\x7f', '\\N', '\\t', "'q'", 'é😀 ünï', '</script>\u2028\u2029',
  ' =spaced', 'x=1', '1,5', 'plain',
];
const TEXT_FIELDS = ['id', 'event', 'actor_id', 'actor_email', 'actor_type', 'actor_name', 'target_id', 'target_type', 'ip', 'user_agent', 'city', 'country', 'region', 'result', 'trace_id'] as const;
const LONDON = { city: 'London', country: 'GB', region: 'England', lat: 51.5142, lng: -0.0931 };
const METADATA = [
  '{"authMethod":"password","mfaUsed":false}',
  '{}',
  'not json',
  '',
  'null',
  '"a string"',
  '42',
  '[1,2,{"authMethod":"password"}]',
  '{"authMethod":"password","mfaUsed":true,"reason":"x,y","n":1,"nested":{"a":[1,{"b":null}],"q":"say \\"hi\\""}}',
  '{"authMethod":"pässwörd😀","mfaUsed":true,"note":"é\\u2028\\n\\u0000"}',
  '{"authMethod":42,"mfaUsed":"yes"}',
  '{"authMethod":null,"mfaUsed":null}',
  '{"authMethod":"=cmd","mfaUsed":"-1"}',
  '{"authMethod":true}',
  '{"other":"only"}',
  '{"a":1}trailing',
  '{"a":1,}',
  '{"unclosed":',
  '{"big":12345678901234567890,"tiny":1e-300}',
  '{"a":1}{"b":2}',
  '{"a":"raw\nline break"}',
  '\uFEFF{"a":1}',
  // JSON whitespace around or inside an object (a producer's pretty-printing): still the object, still one line
  ' {"a":1}',
  '\t\r\n {"authMethod":"password"}',
  '{"a":1}\n',
  // half an emoji (a string cut by slice()), which JSON.stringify writes as an escaped lone surrogate
  JSON.stringify({ authMethod: 'saml', mfaUsed: false, reason: 'denied 😀'.slice(0, 8) }),
  JSON.stringify({ note: '\udc00 low, \ud800\ud800 two highs', name: '😀 whole' }),
  '{"escaped backslash":"\\\\ud800","then":"\\ud800"}',
  '{"bad escape":"\\ud8zz"}',
  '{\n  "authMethod": "password",\r\n  "mfaUsed": true,\n  "note": "x\\ny"\n}',
];
const LOCATIONS: Array<Pick<LogRow, 'city' | 'country' | 'region' | 'lat' | 'lng'>> = [
  { city: '', country: '', region: '', lat: null, lng: null },
  LONDON,
  { city: 'Sydney', country: 'AU', region: 'New South Wales', lat: -33.8688, lng: -151.2093 },
  { city: 'São Paulo', country: 'BR', region: 'SP', lat: -23.55, lng: -46.63 },
  { city: '', country: '', region: '', lat: 0, lng: 0 },
  { city: 'x', country: 'y', region: 'z', lat: 1e-7, lng: -1e-7 },
  { city: 'x', country: 'y', region: 'z', lat: 51.51423456789012, lng: 179.99999999999997 },
  { city: 'x', country: 'y', region: 'z', lat: 0.30000000000000004, lng: -90 },
  // a city without coordinates, or half of them: no location at all
  { city: 'Nowhere', country: 'NW', region: 'N', lat: null, lng: null },
  { city: 'Half', country: 'HF', region: 'H', lat: 10, lng: null },
];

let hostileN = 0;
function hostile(over: Partial<LogRow>): LogRow {
  const n = hostileN++;
  return {
    id: `log_h${String(n).padStart(5, '0')}`,
    environment: 'live',
    timestamp: new Date(HOSTILE_AT + n).toISOString(),
    event: 'user.login',
    actor_id: 'key_1',
    actor_email: 'ci@example.com',
    actor_type: 'api_key',
    actor_name: 'ci key',
    target_id: 'ses_1',
    target_type: 'session',
    ip: '81.2.69.142',
    user_agent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko)',
    ...LONDON,
    result: 'success',
    trace_id: 'req_1',
    metadata: '{"authMethod":"api_key","mfaUsed":false}',
    ...over,
  };
}

function hostileRows(): LogRow[] {
  const out: LogRow[] = [];
  for (const field of TEXT_FIELDS) {
    for (const [k, v] of HOSTILE.entries()) out.push(hostile({ [field]: field === 'id' ? `${v}~${k}` : v }));
  }
  for (const metadata of METADATA) out.push(hostile({ metadata }));
  for (const location of LOCATIONS) {
    out.push(hostile(location));
    out.push(hostile({ ...location, target_id: '', target_type: 'session', actor_name: '' }));
  }
  // actors: anonymous (no id, no email), only an email, only an id, with and without a name
  out.push(
    hostile({ actor_id: '', actor_email: '', actor_type: 'anonymous', actor_name: '' }),
    hostile({ actor_id: '', actor_email: 'a@example.com', actor_type: 'user', actor_name: '' }),
    hostile({ actor_id: 'user_1', actor_email: '', actor_type: 'user', actor_name: '' }),
    hostile({ actor_id: '', actor_email: '', actor_type: 'api_key', actor_name: '=named' }),
    // no target: its type is not written even when stored
    hostile({ target_id: '', target_type: '=session' }),
    // nothing to escape anywhere (the plain paths), next to one needing it in the user agent only
    hostile({ user_agent: 'jest' }),
    hostile({ user_agent: 'jest, "quoted"', actor_name: '' }),
    // ids with commas and quotes
    hostile({ id: 'log_h,1' }),
    hostile({ id: 'log_h"2"', trace_id: 'req,"3"' }),
    // every field hostile at once
    hostile({ id: '=id,1', event: '+ev', actor_id: '-a', actor_email: '@e', actor_type: '\tt', actor_name: '\rn', target_id: '"', target_type: ',', ip: '\n', user_agent: '=ua', city: '-c', country: '+', region: '@', result: '"r"', trace_id: '=t', metadata: '{"authMethod":"@x","mfaUsed":"=1","o":"-"}' }),
  );
  return out;
}

describe('hostile rows', () => {
  let stored: LogRow[];
  beforeAll(() => {
    stored = [...hostileStored].sort(newestFirst);
  });

  test.each(['json', 'ndjson', 'csv'] as const)('%s entries rendered by ClickHouse equal the references, field by field', async (format) => {
    const { out, sizes } = await collect(hostileSpec, format, 50);
    expect(out.map((x) => x.id)).toEqual(stored.map((r) => r.id));
    expect(sizes.every((n) => n <= 50)).toBe(true);
    for (const [i, r] of stored.entries()) checkEntry(format, out[i]!, r);
    // The whole file as the worker puts it together (FILE_FRAMES around the entries) reads back.
    const frame = FILE_FRAMES[format];
    const body = frame.head + out.map((x, i) => (i === 0 ? frame.first : frame.between) + whole(format, x)).join('') + frame.tail;
    if (format === 'csv') {
      const [header, ...records] = parseCsv(body);
      expect(header).toEqual([...CSV_COLUMNS]);
      expect(records).toEqual(stored.map(expectedCsvCells));
    } else {
      const entries = format === 'json' ? (JSON.parse(body) as unknown[]) : body.split('\n').slice(0, -1).map((l) => JSON.parse(l) as unknown);
      expect(entries).toEqual(stored.map(fullForm));
    }
  });

  test('an empty export is a valid file of each format', () => {
    expect(JSON.parse(FILE_FRAMES.json.head + FILE_FRAMES.json.tail)).toEqual([]);
    expect(FILE_FRAMES.ndjson.head + FILE_FRAMES.ndjson.tail).toBe('');
    expect(parseCsv(FILE_FRAMES.csv.head + FILE_FRAMES.csv.tail)).toEqual([[...CSV_COLUMNS]]);
  });

  test('csvCellSql writes every stored text exactly as csvCell does', async () => {
    const cols = TEXT_FIELDS;
    const rs = await ch.query({
      query: `SELECT [${cols.join(', ')}] AS raw, [${cols.map(csvCellSql).join(', ')}] AS cells FROM ${LOG_TABLE}
              WHERE environment = 'live' AND timestamp >= toDateTime64('2026-11-05 00:00:00', 3, 'UTC')`,
      format: 'JSONEachRow',
      clickhouse_settings: RENDER_SETTINGS,
    });
    const got = await rs.json<{ raw: string[]; cells: string[] }>();
    expect(got).toHaveLength(stored.length);
    const seen = new Set<string>();
    for (const { raw, cells } of got) {
      raw.forEach((v, i) => {
        seen.add(v);
        expect([v, cells[i]]).toEqual([v, csvCell(v)]);
      });
    }
    for (const v of HOSTILE) expect(seen.has(v)).toBe(true); // every hostile text made it through the store as it was
  });

  test('the plain CSV path and the escaped one agree: each record is what csvCellSql on every cell writes', async () => {
    const cell = csvCellSql;
    const located = 'lat IS NOT NULL AND lng IS NOT NULL';
    const allEscaped = `concat(${['id'].map(cell).join()}, ',', concat(replaceOne(toString(timestamp), ' ', 'T'), 'Z'), ',',
      ${['event', 'actor_id', 'actor_email', 'actor_type', 'actor_name', 'target_id', "if(target_id != '', target_type, '')", 'ip', 'user_agent'].map(cell).join(", ',', ")}, ',',
      if(${located}, concat(${['city', 'country', 'region'].map(cell).join(", ',', ")}, ',', toString(assumeNotNull(lat)), ',', toString(assumeNotNull(lng))), ',,,,'), ',',
      ${cell('result')}, ',', ${cell('trace_id')}, ',')`;
    const rs = await ch.query({
      query: `SELECT id, ${allEscaped} AS record FROM ${LOG_TABLE} WHERE environment = 'live' AND timestamp >= toDateTime64('2026-11-05 00:00:00', 3, 'UTC')`,
      format: 'JSONEachRow',
      clickhouse_settings: RENDER_SETTINGS,
    });
    const escaped = new Map((await rs.json<{ id: string; record: string }>()).map((x) => [x.id, x.record]));
    const { out } = await collect(hostileSpec, 'csv', 1_000, false);
    expect(out.length).toBe(escaped.size);
    for (const x of out) expect([x.id, x.entry]).toEqual([x.id, escaped.get(x.id)]);
    // and over the ordinary rows, which mostly take the plain path
    const base = await collect(spec, 'csv', 2_500, false);
    const rs2 = await ch.query({
      query: `SELECT id, ${allEscaped} AS record FROM ${LOG_TABLE} WHERE environment = 'live' AND timestamp < toDateTime64('2026-11-02 00:00:00', 3, 'UTC')`,
      format: 'JSONEachRow',
    });
    const escaped2 = new Map((await rs2.json<{ id: string; record: string }>()).map((x) => [x.id, x.record]));
    for (const x of base.out) expect([x.id, x.entry]).toEqual([x.id, escaped2.get(x.id)]);
  });
});

// ---- reading and cutting pages (RowBinary) ----

describe('RenderedRows and scanRows', () => {
  const page = (rs: Parameters<typeof rowBinary>[0]): RenderedPage => ({ bytes: rowBinary(rs), count: rs.length });

  test('reads positions past 2^32, times before 1970, and strings whose lengths take several LEB128 bytes, in place', () => {
    const long = 'é'.repeat(10_000); // 20,000 bytes: a three-byte length
    const p = page([
      { seq: 2 ** 40 + 5, ms: Date.parse('2026-11-01T00:00:00.123Z'), id: 'log_1', entry: 'x'.repeat(200), meta: '{"a":1}' },
      { seq: 0, ms: -1, id: '', entry: long, meta: '' },
      { seq: 1, ms: -(2 ** 40), id: 'log_3', entry: '', meta: 'm' },
    ]);
    expect(readRows(p)).toEqual([
      { seq: 2 ** 40 + 5, ms: Date.parse('2026-11-01T00:00:00.123Z'), id: 'log_1', entry: 'x'.repeat(200), meta: '{"a":1}' },
      { seq: 0, ms: -1, id: '', entry: long, meta: '' },
      { seq: 1, ms: -(2 ** 40), id: 'log_3', entry: '', meta: 'm' },
    ]);
    const r = new RenderedRows(p.bytes);
    expect(r.next()).toBe(true);
    expect([r.start, r.idStart, r.idEnd]).toEqual([0, 17, 22]);
    expect(r.entryEnd - r.entryStart).toBe(200);
    expect(r.pos).toBe(r.metaEnd);
    expect(new RenderedRows(Buffer.alloc(0)).next()).toBe(false);
  });

  test('a page cut short anywhere is an error, not a shorter page', () => {
    const bytes = rowBinary([{ seq: 1, ms: 2, id: 'log_1', entry: 'entry', meta: 'meta' }]);
    for (let end = 1; end < bytes.length; end++) {
      const r = new RenderedRows(bytes.subarray(0, end));
      expect(() => r.next()).toThrow('export page: a row is cut short');
    }
  });

  test('scanRows cuts at row ends only, into runs of at most maxBytes (a larger row alone), with their counts', () => {
    const rs = Array.from({ length: 50 }, (_, i) => ({ seq: i + 1, ms: i, id: `log_${i}`, entry: 'x'.repeat(i * 3), meta: '' }));
    const p = page(rs);
    const scan = scanRows(p.bytes, 200);
    const runs = scan.runs;
    expect(scan.count).toBe(50);
    expect(p.bytes.toString('utf8', scan.last.idStart, scan.last.idEnd)).toBe('log_49');
    expect(runs.length).toBeGreaterThan(5);
    expect(Buffer.concat(runs.map((x) => x.bytes))).toEqual(p.bytes);
    expect(runs.reduce((n, x) => n + x.count, 0)).toBe(50);
    expect(runs.flatMap(readRows)).toEqual(readRows(p));
    for (const [i, run] of runs.entries()) {
      expect(readRows(run)).toHaveLength(run.count);
      expect(run.bytes.length <= 200 || run.count === 1).toBe(true);
      // greedy: the next run's first row would not have fitted
      const next = runs[i + 1];
      if (next) expect(run.bytes.length + rowBinary([rs[runs.slice(0, i + 1).reduce((n, x) => n + x.count, 0)]!]).length).toBeGreaterThan(200);
    }
    expect(scanRows(p.bytes, p.bytes.length).runs).toEqual([p]);
    expect(scanRows(p.bytes, p.bytes.length).runs[0]!.bytes).toBe(p.bytes); // a page that fits is not copied
    expect(scanRows(Buffer.alloc(0), 10)).toMatchObject({ count: 0, runs: [] });
    const one = page([{ id: 'log_big', entry: 'y'.repeat(1000) }]);
    expect(scanRows(one.bytes, 10).runs).toEqual([one]);
  });
});

describe('a page query that fails', () => {
  const full = rowBinary([{ id: 'log_2', entry: 'b', ms: 2 }, { id: 'log_1', entry: 'a', ms: 1 }]);

  it('while the page before it is still being taken: handled at once (Node would end the process), thrown at the next step', async () => {
    // Promises that record whether a rejection handler was attached: Jest cannot observe a rejection that is
    // unhandled for a while and handled later, which is what ends a Node process (checked by hand: it does).
    const created: Tracked<unknown>[] = [];
    class Tracked<T> extends Promise<T> {
      handled = false;
      constructor(executor: (resolve: (v: T) => void, reject: (e: unknown) => void) => void) {
        super(executor);
        created.push(this as Tracked<unknown>);
      }
      override then<A = T, B = never>(onFulfilled?: ((v: T) => A | PromiseLike<A>) | null, onRejected?: ((e: unknown) => B | PromiseLike<B>) | null): Promise<A | B> {
        if (onRejected) this.handled = true;
        return super.then(onFulfilled, onRejected);
      }
    }
    let failingFrom = -1;
    const failing = {
      exec: () => {
        if (failingFrom === -1 && created.length > 0) {
          failingFrom = created.length;
          return Tracked.reject(new Error('memory limit exceeded'));
        }
        return Tracked.resolve({ stream: (async function* () { yield full; })() });
      },
    } as unknown as ClickHouseClient;
    const pages = exportPages(failing, spec, 'csv', 2);
    const first = await pages.next();
    expect(first.value?.count).toBe(2);
    expect(failingFrom).toBeGreaterThan(-1); // the next page was asked for while this one is held
    // Every promise made from the failed query has its failure handled (one is enough for Node: the chain's end).
    expect(created.slice(failingFrom).some((p) => p.handled)).toBe(true);
    await expect(pages.next()).rejects.toThrow('memory limit exceeded');
  });

  it('a taker that stops early calls the prefetched query off', async () => {
    const signals: AbortSignal[] = [];
    const ch = {
      exec: (p: { abort_signal: AbortSignal }) => {
        signals.push(p.abort_signal);
        return signals.length === 1 ? Promise.resolve({ stream: (async function* () { yield full; })() }) : new Promise(() => undefined);
      },
    } as unknown as ClickHouseClient;
    for await (const page of exportPages(ch, spec, 'json', 2)) {
      expect(page.count).toBe(2);
      break;
    }
    expect(signals).toHaveLength(2);
    expect(signals[1]!.aborted).toBe(true);
  });
});
