import { rowFromEvent, type LogRow } from '@secsvc/audit-store';
import { parseCsv } from '../../test/support/csv';
import { CSV_COLUMNS, CSV_HEADER, csvCell, csvRecord, FORMATS, fullForm } from './index';

const row = (over: Partial<LogRow> = {}): LogRow => ({
  ...rowFromEvent(
    {
      id: 'log_01jd0000000000000000000001',
      environment: 'live',
      type: 'user.login',
      timestamp: '2026-11-01T12:00:00.001Z',
      actor: { id: 'user_1', email: 'alice@example.com', type: 'user' },
      target: { id: 'ses_1', type: 'session' },
      context: { ip: '81.2.69.142', userAgent: 'Mozilla/5.0 (X11; Linux x86_64)' },
      result: 'success',
      traceId: 'req_1',
      metadataJson: '{"authMethod":"password","mfaUsed":false}',
    },
    { city: 'London', country: 'GB', region: 'England', lat: 51.5142, lng: -0.0931 },
  ),
  ...over,
});

describe('CSV', () => {
  it('has a header of dotted column names and one CRLF record per entry with the same number of fields', () => {
    expect(CSV_HEADER).toBe(CSV_COLUMNS.join(',') + '\r\n');
    expect(CSV_COLUMNS).toContain('context.location.coordinates.lat');
    const [header, rec] = parseCsv(CSV_HEADER + csvRecord(row()));
    expect(header).toEqual([...CSV_COLUMNS]);
    expect(Object.fromEntries(header!.map((h, i) => [h, rec![i]]))).toEqual({
      id: 'log_01jd0000000000000000000001',
      timestamp: '2026-11-01T12:00:00.001Z',
      event: 'user.login',
      'actor.id': 'user_1',
      'actor.email': 'alice@example.com',
      'actor.type': 'user',
      'actor.name': '',
      'target.id': 'ses_1',
      'target.type': 'session',
      'context.ip': '81.2.69.142',
      'context.userAgent': 'Mozilla/5.0 (X11; Linux x86_64)',
      'context.location.city': 'London',
      'context.location.country': 'GB',
      'context.location.region': 'England',
      // numbers stay numbers: a negative longitude is not "escaped"
      'context.location.coordinates.lat': '51.5142',
      'context.location.coordinates.lng': '-0.0931',
      result: 'success',
      traceId: 'req_1',
      'metadata.authMethod': 'password',
      'metadata.mfaUsed': 'false',
      'metadata.other': '',
    });
  });

  it('quotes commas, quotes and line breaks per RFC 4180, and reads back exactly', () => {
    const ua = 'a, "b"\r\nc\nd';
    const [, rec] = parseCsv(CSV_HEADER + csvRecord(row({ user_agent: ua, actor_email: '', metadata: '{"authMethod":"api_key","mfaUsed":true,"note":"x,y"}' })));
    expect(rec![CSV_COLUMNS.indexOf('context.userAgent')]).toBe(ua);
    expect(rec![CSV_COLUMNS.indexOf('actor.email')]).toBe('');
    expect(rec![CSV_COLUMNS.indexOf('metadata.other')]).toBe('{"note":"x,y"}');
    expect(csvCell('plain')).toBe('plain');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
  });

  it.each(['=1+1', '+1', '-1', '@SUM(A1)', '\tx', '\rx', '=HYPERLINK("http://evil","x")', '-2+3,=x'])('neutralises formula injection in %j', (evil) => {
    const cell = csvCell(evil);
    const [[back]] = parseCsv(`${cell}\r\n`) as [[string]];
    expect(back).toBe(`'${evil}`);
    expect(back.startsWith("'")).toBe(true);
    const [, rec] = parseCsv(CSV_HEADER + csvRecord(row({ actor_email: evil, user_agent: evil, city: evil })));
    for (const col of ['actor.email', 'context.userAgent', 'context.location.city'] as const) expect(rec![CSV_COLUMNS.indexOf(col)]).toBe(`'${evil}`);
  });

  it('leaves location and target cells empty when the entry has none', () => {
    const [, rec] = parseCsv(CSV_HEADER + csvRecord(row({ lat: null, lng: null, city: '', country: '', region: '', target_id: '', target_type: '' })));
    for (const col of ['target.id', 'target.type', 'context.location.city', 'context.location.coordinates.lat'] as const) expect(rec![CSV_COLUMNS.indexOf(col)]).toBe('');
  });
});

describe('JSON and NDJSON', () => {
  it('write SPEC full-form entries (target and location only when present)', () => {
    expect(fullForm(row())).toEqual({
      id: 'log_01jd0000000000000000000001',
      timestamp: '2026-11-01T12:00:00.001Z',
      event: 'user.login',
      actor: { id: 'user_1', email: 'alice@example.com', type: 'user' },
      target: { id: 'ses_1', type: 'session' },
      context: { ip: '81.2.69.142', userAgent: 'Mozilla/5.0 (X11; Linux x86_64)', location: { city: 'London', country: 'GB', region: 'England', coordinates: { lat: 51.5142, lng: -0.0931 } } },
      result: 'success',
      traceId: 'req_1',
      metadata: { authMethod: 'password', mfaUsed: false },
    });
    const anon = fullForm(row({ actor_id: '', actor_email: '', actor_type: 'anonymous', target_id: '', lat: null, lng: null, metadata: 'not json' }));
    expect(anon.actor).toEqual({ type: 'anonymous' });
    expect('target' in anon).toBe(false);
    expect(anon.context).toEqual({ ip: '81.2.69.142', userAgent: 'Mozilla/5.0 (X11; Linux x86_64)' });
    expect(anon.metadata).toEqual({});
  });

  it('JSON is one array (empty too); NDJSON one entry per line', () => {
    const build = (f: keyof typeof FORMATS, rows: LogRow[]) => FORMATS[f].head + rows.map((r, i) => FORMATS[f].entry(r, i === 0)).join('') + FORMATS[f].tail;
    const rows = [row(), row({ id: 'log_01jd0000000000000000000002', user_agent: '</script>\u2028"' })];
    expect(JSON.parse(build('json', rows))).toEqual(rows.map(fullForm));
    expect(JSON.parse(build('json', []))).toEqual([]);
    const lines = build('ndjson', rows).split('\n');
    expect(lines.pop()).toBe('');
    expect(lines.map((l) => JSON.parse(l) as unknown)).toEqual(rows.map(fullForm));
  });
});
