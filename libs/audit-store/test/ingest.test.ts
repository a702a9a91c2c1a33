import { events } from '@secsvc/proto';
import { newId, type BusRecord } from '@secsvc/shared';
import { canonicalEntry } from '../src/chain';
import { GeoIp } from '../src/geoip';
import { EventRecords, type MalformedRecord } from '../src/ingest';
import { rowFromEvent } from '../src/rows';

let geo: GeoIp;
beforeAll(async () => {
  geo = await GeoIp.open();
});

const event = (over: Partial<events.AuthEvent> = {}): events.AuthEvent => ({
  id: newId('log'),
  environment: 'live',
  type: 'user.login',
  timestamp: '2026-11-28T10:00:00.123Z',
  actor: { id: 'user_1', email: 'a@example.com', type: 'user' },
  target: { id: 'ses_1', type: 'session' },
  context: { ip: '81.2.69.142', userAgent: 'jest' },
  result: 'success',
  traceId: 'req_1',
  metadataJson: '{"authMethod":"password","mfaUsed":false}',
  ...over,
});
const record = (e: unknown, extra: Partial<BusRecord> = {}): BusRecord => ({ id: 'log_x', key: 'k', value: typeof e === 'string' ? e : JSON.stringify(events.AuthEvent.toJSON(e as events.AuthEvent)), ...extra });

test('an event becomes the row the store inserts, located, with its canonical form and where it came from on the bus', () => {
  const e = event();
  const records = new EventRecords(geo);
  const [entry] = records.entries([record(e, { position: { partition: 3, offset: 41 }, mayRepeat: true })], () => undefined);
  const row = rowFromEvent(e, geo.lookup('81.2.69.142'));
  expect(entry).toEqual({ row, canonical: canonicalEntry(row), origin: { partition: 3, offset: 41, mayRepeat: true } });
  expect(entry!.row.city).not.toBe('');
  // Without a position there is no origin (the store then looks the event up by id).
  expect(records.entries([record(e)], () => undefined)[0]).not.toHaveProperty('origin');
});

test('a record prepared when the bus read it is not parsed again; one never shown to prepare is parsed then', () => {
  const records = new EventRecords(geo);
  const seen = record(event({ type: 'user.logout' }));
  records.prepare(seen);
  // The text spoiled after prepare: the prepared entry is what the batch gets.
  (seen as { value: string }).value = 'not json';
  expect(records.entries([seen], () => undefined)[0]!.row.event).toBe('user.logout');
  // Taken once: handed over again (the same object), it is parsed again, now from the spoiled text.
  const bad: MalformedRecord[] = [];
  expect(records.entries([seen], (b) => bad.push(b))).toEqual([]);
  expect(bad.map((b) => b.record)).toEqual([seen]);
});

test('malformed records are left out and reported, the others kept in order', () => {
  const records = new EventRecords(geo);
  const good = [event(), event()];
  const batch = [
    record(good[0]),
    record('{"id": '),
    record(event({ id: 'not-a-log-id' })),
    record(event({ timestamp: 'yesterday' })),
    record(event({ environment: '' })),
    record('[]'),
    record(good[1]),
  ];
  batch.slice(0, 3).forEach(records.prepare);
  const bad: MalformedRecord[] = [];
  const entries = records.entries(batch, (b) => bad.push(b));
  expect(entries.map((x) => x.row.id)).toEqual(good.map((e) => e.id));
  expect(bad.map((b) => b.record)).toEqual(batch.slice(1, 6));
  expect(bad.every((b) => b.reason.length > 0)).toBe(true);
});
