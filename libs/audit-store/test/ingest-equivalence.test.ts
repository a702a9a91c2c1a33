import { events } from '@secsvc/proto';
import { isId, newId, type BusPosition, type BusRecord } from '@secsvc/shared';
import { canonicalEntry } from '../src/chain';
import { GeoIp } from '../src/geoip';
import { EventRecords, type MalformedRecord } from '../src/ingest';
import { rowFromEvent, type LogRow } from '../src/rows';
import { prng } from './support/prng';

// EventRecords reads the event's JSON straight into the row. The entries it makes must be the ones the path it
// replaced made (JSON.parse, events.AuthEvent.fromJSON, rowFromEvent, and canonicalEntry kept here as it was): the
// canonical form is what the chain hashes, so a byte of difference breaks the chains of existing logs.

/** canonicalEntry before the change. */
function referenceCanonical(r: LogRow): string {
  return JSON.stringify([
    r.id, r.environment, r.timestamp, r.event, r.actor_id, r.actor_email, r.actor_type, r.target_id, r.target_type, r.ip,
    r.user_agent, r.city, r.country, r.region, r.lat === null ? null : Number(r.lat), r.lng === null ? null : Number(r.lng), r.result, r.trace_id, r.metadata, r.actor_name,
  ]);
}

/** EventRecords.entryOf before the change. */
function referenceEntry(record: BusRecord, geo: GeoIp): { row: LogRow; canonical: string; origin?: unknown } | { reason: string } {
  let e: events.AuthEvent;
  try {
    e = events.AuthEvent.fromJSON(JSON.parse(record.value));
  } catch (err) {
    return { reason: (err as Error).message };
  }
  if (!isId('log', e.id) || !e.type || !e.environment || Number.isNaN(Date.parse(e.timestamp ?? ''))) return { reason: 'missing id, type, environment or timestamp' };
  const row = rowFromEvent(e, geo.lookup(e.context?.ip ?? ''));
  return { row, canonical: referenceCanonical(row), ...(record.position && { origin: { ...record.position, ...(record.mayRepeat && { mayRepeat: true }) } }) };
}

let geo: GeoIp;
beforeAll(async () => {
  geo = await GeoIp.open();
});

/** Both paths over the records (each prepared, or not, as `prepare` says): the same entries, or the same reasons. */
function expectSame(records: BusRecord[], prepare = (i: number) => i % 2 === 0): { entries: number; skipped: number } {
  const parsed = new EventRecords(geo);
  records.forEach((r, i) => prepare(i) && parsed.prepare(r));
  const skipped: MalformedRecord[] = [];
  const entries = parsed.entries(records, (bad) => skipped.push(bad));
  let e = 0;
  let s = 0;
  for (const record of records) {
    const want = referenceEntry(record, geo);
    if ('reason' in want) {
      const got = skipped[s++];
      expect({ value: record.value, got: got?.reason, record: got?.record === record }).toStrictEqual({ value: record.value, got: want.reason, record: true });
    } else {
      const got = entries[e++];
      expect({ value: record.value, got }).toStrictEqual({ value: record.value, got: want });
      // The chain's canonicalEntry (rows of other origins: the store, adopted rows) agrees with the frozen copy.
      expect(canonicalEntry(got!.row)).toBe(want.canonical);
    }
  }
  expect([e, s]).toEqual([entries.length, skipped.length]);
  return { entries: e, skipped: s };
}

const positions = [undefined, { partition: 0, offset: 7 }, { partition: 5, offset: 123456789 }];
function busRecord(value: string, i: number): BusRecord {
  const position: BusPosition | undefined = positions[i % 3];
  return { id: `rec_${i}`, key: 'k', value, ...(position && { position: { ...position } }), ...(i % 5 === 1 && { mayRepeat: true }), ...(i % 7 === 3 && { mayRepeat: false }) };
}

/** A typical event as producers write it (events.AuthEvent.toJSON), as a plain object to vary. */
function baseEvent(n = 0): Record<string, unknown> {
  return {
    id: newId('log'),
    environment: 'live',
    type: ['user.login', 'user.password_reset.failed', 'api_key.created'][n % 3],
    timestamp: new Date(Date.UTC(2026, 10, 28, 10, 0, 0, n)).toISOString(),
    actor: { id: `user_${n}`, email: `person${n}@example.com`, type: 'user' },
    target: { id: `ses_${n}`, type: 'session' },
    context: { ip: ['81.2.69.142', '2001:4860:4860::8888', '10.0.0.1', '8.8.8.8'][n % 4], userAgent: 'Mozilla/5.0 (jest)' },
    result: n % 2 ? 'failure' : 'success',
    traceId: `req_${n}`,
    metadataJson: '{"authMethod":"password","mfaUsed":false}',
  };
}

/** Values a field may hold in JSON that a producer would not send. */
const oddValues: unknown[] = [
  undefined, null, '', ' ', 0, -0, 1.5, -12, 1e21, 2 ** 64 + 1, true, false, {}, [], [1, [2, 'x']], { a: 1 }, [null], [[]],
  // String() of these throws ("Cannot convert object to primitive value").
  { toString: 1 }, { toString: 'x', valueOf: 2 }, [{ toString: 1 }],
  'é', 'Zürich – 東京 🎉', '\u0000\n\t"\\/', '\ud800', 'a\udc00b', '\u2028\u2029', '<script>', '{"nested":"json"}', 'x'.repeat(5000),
];

/** `json` with `path` (dotted) set to `v` (absent when undefined). */
function withField(json: Record<string, unknown>, path: string, v: unknown): Record<string, unknown> {
  const copy = structuredClone(json);
  const keys = path.split('.');
  let at: Record<string, unknown> = copy;
  for (const k of keys.slice(0, -1)) {
    if (typeof at[k] !== 'object' || at[k] === null) at[k] = {};
    at = at[k] as Record<string, unknown>;
  }
  const last = keys[keys.length - 1]!;
  if (v === undefined) delete at[last];
  else at[last] = v;
  return copy;
}

const FIELDS = [
  'id', 'environment', 'type', 'timestamp', 'actor', 'actor.id', 'actor.email', 'actor.type', 'actor.name', 'target', 'target.id', 'target.type',
  'context', 'context.ip', 'context.userAgent', 'context.user_agent', 'result', 'traceId', 'trace_id', 'metadataJson', 'metadata_json',
];

test('every field missing, null, empty, or of another JSON type: the same entry or the same reason', () => {
  const values: string[] = [];
  for (const field of FIELDS) {
    for (const v of oddValues) values.push(JSON.stringify(withField(baseEvent(values.length), field, v)));
  }
  const { entries, skipped } = expectSame(values.map(busRecord));
  expect(entries * skipped).toBeGreaterThan(0);
});

test('snake_case aliases: taken when the camelCase field is absent or null, as fromJSON does', () => {
  const values: string[] = [];
  const pairs = [['traceId', 'trace_id'], ['metadataJson', 'metadata_json'], ['context.userAgent', 'context.user_agent']] as const;
  for (const [camel, snake] of pairs) {
    for (const c of [undefined, null, '', 'camel', 0]) {
      for (const s of [undefined, null, '', 'snake', 7, { toString: 1 }]) values.push(JSON.stringify(withField(withField(baseEvent(values.length), camel, c), snake, s)));
    }
  }
  expectSame(values.map(busRecord));
});

test('actor, target and context absent, null, empty or not objects', () => {
  const values: string[] = [];
  for (const key of ['actor', 'target', 'context']) {
    for (const v of [undefined, null, {}, [], 'text', 5, true, { type: 'api_key', name: 'ci key' }, { id: 'x', type: null }, { id: null, email: null, type: null, name: null }]) {
      values.push(JSON.stringify(withField(baseEvent(values.length), key, v)));
    }
  }
  expectSame(values.map(busRecord));
});

test('ids: only log ids of the right shape', () => {
  const body = newId('log').slice(4);
  const ids = [
    `log_${body}`, `LOG_${body}`, `log_${body.toUpperCase()}`, `log_${body.slice(1)}`, `log_${body}0`, `evt_${body}`, body, `log_${body.slice(0, -1)}i`,
    `log_${body.slice(0, -1)}u`, `log_${body}\n`, ` log_${body}`, 'log_', '', 12, null,
  ];
  expectSame(ids.map((id, i) => busRecord(JSON.stringify({ ...baseEvent(i), id }), i)));
});

test('timestamps in every form Date reads, or not', () => {
  const stamps = [
    '2026-11-28T10:00:00.123Z', '2026-11-28T10:00:00Z', '2026-11-28T10:00:00.1Z', '2026-11-28T10:00:00.1234567Z', '2026-11-28T10:00Z',
    '2026-11-28T12:00:00.000+02:00', '2026-11-28T04:30:00.000-05:30', '2026-11-28T10:00:00.000+00:00', '2026-11-28T10:00:00.000z',
    '2026-11-28t10:00:00.000Z', '2026-11-28 10:00:00.000Z', '2026-11-28T10:00:00.000', '2026-11-28', '2026-11', '2026', '+002026-11-28T10:00:00.000Z',
    '-000001-01-01T00:00:00.000Z', '+275760-09-13T00:00:00.000Z', '+275760-09-13T00:00:00.001Z', '0000-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z',
    '2026-13-01T00:00:00.000Z', '2026-00-10T00:00:00.000Z', '2026-02-29T00:00:00.000Z', '2024-02-29T00:00:00.000Z', '2026-02-30T00:00:00.000Z',
    '2026-04-31T00:00:00.000Z', '2026-01-32T00:00:00.000Z', '2026-01-00T00:00:00.000Z', '2026-01-01T24:00:00.000Z', '2026-01-01T23:60:00.000Z',
    '2026-01-01T23:59:60.000Z', '1900-02-29T00:00:00.000Z', '2000-02-29T00:00:00.000Z', ' 2026-11-28T10:00:00.000Z', '2026-11-28T10:00:00.000Z ',
    '２０２６-11-28T10:00:00.000Z', 'Sat, 28 Nov 2026 10:00:00 GMT', 'November 28, 2026 10:00', 'yesterday', 'now', '', '1764324000000', 1764324000000,
    0, -1, 1.5, true, null, [], ['2026-11-28T10:00:00.000Z'], {},
  ];
  const { entries, skipped } = expectSame(stamps.map((timestamp, i) => busRecord(JSON.stringify({ ...baseEvent(i), timestamp }), i)));
  expect(entries * skipped).toBeGreaterThan(0);
});

test('every day of every month (and the days around them), at the edges of the day, over leap and common years', () => {
  const values: string[] = [];
  const pad = (n: number, w: number) => String(n).padStart(w, '0');
  for (const year of [0, 1, 4, 100, 400, 1582, 1900, 1970, 2000, 2023, 2024, 2026, 2100, 2400, 9999]) {
    for (let month = 0; month <= 13; month++) {
      for (let day = 0; day <= 32; day++) {
        for (const time of ['00:00:00.000', '23:59:59.999', '24:00:00.000', '12:60:00.000', '12:00:60.000', '09:05:07.123']) {
          values.push(JSON.stringify({ ...baseEvent(values.length), timestamp: `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}T${time}Z` }));
        }
      }
    }
  }
  const { entries, skipped } = expectSame(values.map(busRecord), () => false);
  expect(entries * skipped).toBeGreaterThan(0);
});

test('texts that are not JSON objects, and JSON written otherwise: spaces, key order, escapes, duplicate keys, unknown fields', () => {
  const e = baseEvent(1);
  const text = JSON.stringify(e);
  const values = [
    '', ' ', 'null', 'true', '0', '"text"', '[]', '[1]', '{}', '{"id": ', 'not json', text.slice(0, -1), `${text}x`, `${text}\n`, `\t${text}`,
    JSON.stringify(e, null, 2),
    JSON.stringify(Object.fromEntries(Object.entries(e).reverse())),
    JSON.stringify(events.AuthEvent.toJSON(e as unknown as events.AuthEvent)),
    text.replace('"id":', '"\\u0069d":'),
    text.replace('"live"', '"\\u006cive"'),
    text.replace('"type":"', '"type":"\\u0000'),
    text.replace('{', `{"id":"log_${'0'.repeat(26)}",`),
    text.replace(/}$/, `,"id":"${e.id as string}x"}`),
    text.replace(/}$/, ',"extra":{"deep":[1,2,{"a":null}]},"__proto__":{"id":"x"},"constructor":1}'),
    text.replace('"actor":{', '"actor":{"__proto__":null,'),
    text.replace('"actor":{', '"actor":{"toString":1,'),
    // A producer's own JSON.stringify (no jsonb): escapes as JSON.stringify writes them.
    JSON.stringify({ ...e, context: { ip: '81.2.69.142', userAgent: 'Tab\there "quoted" \\ back\u0001slash \u2028' }, metadataJson: JSON.stringify({ note: 'line\nbreak', emoji: '😀' }) }),
  ];
  expectSame(values.map(busRecord));
});

test('randomised events: the same entries, prepared or not', () => {
  const rand = prng(20261128);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const strings = ['', 'a', 'live', 'test-env', 'user.login', 'ü', '東京', '😀', '"', '\\', '\n', '\u0007', '\ud83d', 'x'.repeat(300), ' padded ', '{}', '{"a":1}'];
  const anyValue = (): unknown => (rand() < 0.7 ? pick(strings) : pick(oddValues));
  const values: string[] = [];
  for (let i = 0; i < 20_000; i++) {
    let json = baseEvent(i);
    const changes = Math.floor(rand() * 4);
    for (let c = 0; c < changes; c++) json = withField(json, pick(FIELDS), anyValue());
    values.push(JSON.stringify(json));
  }
  const { entries, skipped } = expectSame(values.map(busRecord), () => rand() < 0.5);
  expect(entries * skipped).toBeGreaterThan(0);
});
