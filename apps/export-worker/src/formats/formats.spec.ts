import { CSV_COLUMNS, FILE_FRAMES } from '@secsvc/audit-store';
import { parseCsv } from '../../test/support/csv';
import { csvCell, csvMetadataCells, entryEnd, memoByBytes, metadataJson, metadataObject } from './index';

const cellsOf = (text: string) => csvMetadataCells(Buffer.from(text));

/** A CSV line of the three metadata cells (what the worker appends to ClickHouse's part of a record), read back. */
const metadataRecord = (text: string) => {
  const bytes = cellsOf(text);
  expect(Buffer.isBuffer(bytes)).toBe(true);
  const s = bytes.toString('utf8');
  expect(s.endsWith('\r\n')).toBe(true);
  const records = parseCsv(s);
  expect(records).toHaveLength(1);
  return records[0]!;
};

describe('csvCell', () => {
  it('leaves plain text as it is, and quotes commas, quotes and line breaks per RFC 4180, reading back exactly', () => {
    for (const plain of ['plain', '', 'log_01jd0000000000000000000001', 'x=1', ' =spaced', 'é😀', "'q'", 'back\\slash', 'tab\tmid', '1.5']) expect(csvCell(plain)).toBe(plain);
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('"')).toBe('""""');
    expect(csvCell('a,b')).toBe('"a,b"');
    for (const v of ['a, "b"\r\nc\nd', 'mid\rcr', 'line\nbreak', '""', ',', 'trailing,']) {
      expect(csvCell(v).startsWith('"')).toBe(true);
      expect(parseCsv(`${csvCell(v)},x\r\n`)).toEqual([[v, 'x']]);
    }
  });

  it.each(['=1+1', '=', '+1', '-1', '-', '@SUM(A1)', '\tx', '\rx', '=HYPERLINK("http://evil","x")', '-2+3,=x'])('neutralises formula injection in %j', (evil) => {
    const cell = csvCell(evil);
    expect(cell.startsWith(`"'`)).toBe(true);
    expect(parseCsv(`${cell}\r\n`)).toEqual([[`'${evil}`]]);
  });
});

describe('csvMetadataCells', () => {
  const [auth, mfa, other] = ['metadata.authMethod', 'metadata.mfaUsed', 'metadata.other'].map((c) => CSV_COLUMNS.indexOf(c as (typeof CSV_COLUMNS)[number]));

  it('are the last three columns: authMethod, mfaUsed, and every other key as one JSON object, then CRLF', () => {
    expect([auth, mfa, other]).toEqual([CSV_COLUMNS.length - 3, CSV_COLUMNS.length - 2, CSV_COLUMNS.length - 1]);
    expect(cellsOf('{"authMethod":"password","mfaUsed":false}').toString()).toBe('password,false,\r\n');
    expect(metadataRecord('{"authMethod":"api_key","mfaUsed":true,"note":"x,y","n":1,"nested":{"a":[1,null]}}')).toEqual(['api_key', 'true', '{"note":"x,y","n":1,"nested":{"a":[1,null]}}']);
    expect(metadataRecord('{"reason":"say \\"hi\\"\\nbye"}')).toEqual(['', '', '{"reason":"say \\"hi\\"\\nbye"}']);
    expect(metadataRecord('{"authMethod":"pässwörd😀"}')).toEqual(['pässwörd😀', '', '']);
    // values that are not strings, as text
    expect(metadataRecord('{"authMethod":42,"mfaUsed":"yes"}')).toEqual(['42', 'yes', '']);
    expect(metadataRecord('{"authMethod":null,"mfaUsed":null}')).toEqual(['null', 'null', '']);
  });

  it('guards formulas in the metadata cells too', () => {
    expect(metadataRecord('{"authMethod":"=cmd|\\"/c calc\\"!A1","mfaUsed":"-1","x":1}')).toEqual([`'=cmd|"/c calc"!A1`, "'-1", '{"x":1}']);
    expect(metadataRecord('{"authMethod":"@x","mfaUsed":"+1"}')).toEqual(["'@x", "'+1", '']);
  });

  it('writes three empty cells for a metadata text that is not a JSON object', () => {
    for (const text of ['not json', '', 'null', '42', '"str"', '[1,2]', '{"a":1', '{"a":1}trailing']) expect(cellsOf(text).toString()).toBe(',,\r\n');
    expect(cellsOf('{}').toString()).toBe(',,\r\n');
  });

  it('completes a record', () => {
    const text = '{"authMethod":"password","mfaUsed":true}';
    const entry = 'log_1,2026-11-01T00:00:00.000Z,user.login,user_1,a@example.com,user,,,,10.0.0.1,jest,,,,,,success,req_1,';
    const [header, rec] = parseCsv(FILE_FRAMES.csv.head + entry + cellsOf(text).toString());
    expect(header).toEqual([...CSV_COLUMNS]);
    expect(rec).toHaveLength(CSV_COLUMNS.length);
    expect(rec!.slice(-3)).toEqual(['password', 'true', '']);
  });
});

describe('metadataObject and memoByBytes', () => {
  it('metadataObject: the text and the object JSON.parse makes of it, none for anything else', () => {
    const of = (text: string) => metadataObject(Buffer.from(text));
    expect(of('{"a":{"b":1}}')).toEqual({ text: '{"a":{"b":1}}', value: { a: { b: 1 } } });
    expect(of(' {"a":1}\n')).toEqual({ text: ' {"a":1}\n', value: { a: 1 } });
    for (const text of ['', 'x', '[1]', 'null', 'true', '1', '"s"', '{"a":1', '{"a":1}x', '\uFEFF{"a":1}']) expect([text, of(text)]).toEqual([text, undefined]);
    // Bytes that are not UTF-8 (a lone continuation byte, a truncated sequence) make none.
    expect(metadataObject(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0x80, 0x22, 0x7d]))).toBeUndefined();
    expect(metadataObject(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xe2, 0x82, 0x22, 0x7d]))).toBeUndefined();
  });

  it('memoByBytes makes once per distinct stored text, keyed by its bytes, empties itself when full, and makes long texts each time', () => {
    const made: string[] = [];
    const memo = memoByBytes((raw) => {
      made.push(raw.toString('latin1'));
      return Buffer.from(`<${raw.length}>`);
    }, 3, 4);
    const page = Buffer.from([0x61, 0x62, 0x80, 0x63, 0x61, 0x62, 0x80, 0x78, 0x78, 0x78, 0x78, 0x78]);
    const ab = memo(page, 0, 3);
    expect(ab.toString()).toBe('<3>');
    expect(memo(page, 4, 7)).toBe(ab); // the same bytes elsewhere in the page (a byte that is not UTF-8 included)
    memo(page, 0, 1);
    memo(page, 1, 2);
    expect(made).toEqual(['ab\x80', 'a', 'b']);
    memo(page, 3, 4); // full: emptied, then 'c' held
    expect(memo(page, 0, 3)).not.toBe(ab);
    expect(made).toEqual(['ab\x80', 'a', 'b', 'c', 'ab\x80']);
    memo(page, 7, 12);
    memo(page, 7, 12); // longer than maxBytes: made each time
    expect(made.slice(-2)).toEqual(['xxxxx', 'xxxxx']);
  });
});

describe('metadataJson and entryEnd', () => {
  it('metadataJson: the stored text when it is a JSON object (line breaks made spaces), {} for anything else', () => {
    const of = (text: string) => metadataJson(Buffer.from(text));
    expect(of('{"authMethod":"password","mfaUsed":false}')).toBe('{"authMethod":"password","mfaUsed":false}');
    expect(of('\t\r\n {"a":\n1}\n')).toBe('\t   {"a": 1} ');
    expect(of(JSON.stringify({ half: '😀'.slice(0, 1) }))).toBe('{"half":"\\ud83d"}');
    for (const bad of ['', 'null', '[1]', '"{}"', '42', '{"a":1}x', '{"a":1,}', '{"a":"raw\nbreak"}', '\uFEFF{"a":1}', '{"a":1}{"b":2}']) expect([bad, of(bad)]).toEqual([bad, '{}']);
    // Bytes that are not UTF-8 (a lone continuation byte, a truncated sequence) make no object either.
    expect(metadataJson(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0x80, 0x22, 0x7d]))).toBe('{}');
    expect(metadataJson(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xe2, 0x82, 0x22, 0x7d]))).toBe('{}');
  });

  it("entryEnd: the metadata, the closing brace and NDJSON's line break, or CSV's cells, for short and long texts alike", () => {
    const page = Buffer.from(`xx{"n":1}yy${JSON.stringify({ long: 'x'.repeat(600) })}zz`);
    const json = entryEnd('json');
    const ndjson = entryEnd('ndjson');
    const csv = entryEnd('csv');
    expect(json(page, 2, 9).toString()).toBe('{"n":1}}');
    expect(json(page, 2, 9).toString()).toBe('{"n":1}}'); // from the memo
    expect(ndjson(page, 2, 9).toString()).toBe('{"n":1}}\n');
    const long = page.subarray(11, page.length - 2).toString();
    expect(ndjson(page, 11, page.length - 2).toString()).toBe(`${long}}\n`);
    expect(json(Buffer.from('not json'), 0, 8).toString()).toBe('{}}');
    expect(csv(page, 2, 9).toString()).toBe(`,,"{""n"":1}"\r\n`);
    expect(csv(page, 11, page.length - 2)).toEqual(cellsOf(long));
    // The formats share one rule: bytes that are not UTF-8 make no object, in CSV as in JSON.
    const notUtf8 = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0x80, 0x22, 0x7d]);
    expect(csv(notUtf8, 0, notUtf8.length).toString()).toBe(',,\r\n');
    expect(json(notUtf8, 0, notUtf8.length).toString()).toBe('{}}');
  });
});
