/** Parameters bound in the statement's text on chdb: every value arrives exactly, none can leave its literal. */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { bindInText, parameterLiteral, stringLiteral } from '../src/chdb-params';
import { openClickHouse, type ClickHouseClient } from '../src/clickhouse';

let dir: string;
let ch: ClickHouseClient;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'secsvc-ch-params-'));
  ch = await openClickHouse({ path: dir });
}, 60_000);
afterAll(async () => {
  await ch.close();
  await rm(dir, { recursive: true, force: true });
});

const HOSTILE = [
  '',
  'plain',
  "it's",
  "'",
  "''",
  "\\'",
  '\\',
  'ends with a backslash\\',
  "'); DROP TABLE audit_logs; --",
  "' OR 1=1 --",
  '{x:String}',
  '\\x41 \\n \\0 \\u0041',
  Array.from({ length: 32 }, (_, i) => String.fromCharCode(i)).join('') + '\x7f',
  'é 😀 עברית 日本語 \u2028\u2029 \ufeff',
  '"double" `back` $dollar$',
  'a'.repeat(10_000),
];

const one = async (query: string, params: Record<string, unknown>) => {
  const rs = await ch.query({ query, query_params: params, format: 'JSONEachRow' });
  return (await rs.json<Record<string, unknown>>())[0];
};

test('a string arrives exactly, whatever it holds', async () => {
  for (const v of HOSTILE) {
    const got = await one('SELECT {v:String} AS v, length({v:String}) AS n', { v });
    expect(got?.v === v && Number(got.n) === Buffer.byteLength(v)).toBe(true);
  }
});

test('string arrays, integers, and a parameter used twice', async () => {
  const arr = await one('SELECT {a:Array(String)} AS a, length({a:Array(String)}) AS n', { a: HOSTILE });
  expect(JSON.stringify(arr?.a) === JSON.stringify(HOSTILE) && Number(arr?.n) === HOSTILE.length).toBe(true);
  expect(await one(`SELECT 'x' IN {a:Array(String)} AS inside, 'y' IN {e:Array(String)} AS none`, { a: ['x', "'"], e: [] })).toEqual({ inside: 1, none: 0 });
  const nums = await one('SELECT {n:UInt32} + 1 AS n, toString({m:UInt64}) AS m', { n: 41, m: 2n ** 63n });
  expect([Number(nums?.n), nums?.m]).toEqual([42, (2n ** 63n).toString()]);
});

test('what cannot be bound in text is refused, not guessed', () => {
  expect(() => parameterLiteral('n', 'UInt32', '1; DROP')).toThrow('not a non-negative integer');
  expect(() => parameterLiteral('n', 'UInt32', 1.5)).toThrow('not a non-negative integer');
  expect(() => parameterLiteral('n', 'UInt64', -1)).toThrow('not a non-negative integer');
  expect(parameterLiteral('n', 'Int64', -1)).toBe('toInt64(-1)');
  for (const v of [undefined, null, 1, {}, ['x']]) expect(() => parameterLiteral('s', 'String', v)).toThrow('s: not a string');
  expect(() => parameterLiteral('a', 'Array(String)', ['x', 2])).toThrow('a[1]: not a string');
  expect(() => parameterLiteral('a', 'Array(String)', 'x')).toThrow('not an array');
  expect(() => parameterLiteral('d', 'DateTime64(3)', '2026-01-01')).toThrow('is not bound in text');
  expect(() => bindInText('SELECT {missing:String}', {})).toThrow('missing has no value');
});

test('a value larger than ClickHouse\'s default statement size (256 KiB) binds', async () => {
  const big = 'x'.repeat(600_000);
  expect(Number((await one('SELECT length({v:String}) AS n', { v: big }))?.n)).toBe(600_000);
  const ids = Array.from({ length: 20_000 }, (_, i) => `log_01jd${String(i).padStart(22, '0')}`); // a consumer batch's duplicate check
  expect(Number((await one('SELECT length({ids:Array(String)}) AS n', { ids }))?.n)).toBe(20_000);
});

test('an error of a statement bound in text does not quote its values', async () => {
  const secretish = 'person@example.com-search-term';
  const err = await ch.query({ query: 'SELECT no_such_function({v:String})', query_params: { v: secretish } }).then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  expect(err?.message).toMatch(/no_such_function|Unknown function/i);
  expect(err?.message).not.toContain(secretish);
});

test('literals: escapes only, nothing else changed; the query text keeps no placeholder', () => {
  expect(stringLiteral("a'b\\c\nd")).toBe("'a\\'b\\\\c\\x0ad'");
  expect(bindInText('SELECT {a:String}, {a:String}, {b:UInt32}', { a: "'", b: 7 })).toBe("SELECT '\\'', '\\'', toUInt32(7)");
});
