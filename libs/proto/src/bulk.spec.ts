import { randomBytes } from 'node:crypto';
import { AuditServiceService, LogRowsChunk } from './gen/secsvc/audit/v1/audit';
import { AuditServiceBulk, decodeLogRowsChunk, encodeLogRowsChunk } from './bulk';

const generated = (m: LogRowsChunk) => Buffer.from(LogRowsChunk.encode(m).finish());

const COUNTS = [0, 1, 127, 128, 16_383, 16_384, 2_097_152, 2 ** 31 - 1, -1, -128, -(2 ** 31)];
const SIZES = [0, 1, 127, 128, 300, 16_384, 1 << 20];

describe('LogRowsChunk without copies', () => {
  it('writes exactly the bytes of the generated encoder', () => {
    for (const count of COUNTS) for (const size of SIZES) {
      const m = { rows: randomBytes(size), count };
      expect(encodeLogRowsChunk(m).equals(generated(m))).toBe(true);
    }
  });

  it('reads what the generated encoder writes, rows as a view of the message', () => {
    for (const count of COUNTS) for (const size of SIZES) {
      const bytes = generated({ rows: randomBytes(size), count });
      const m = decodeLogRowsChunk(bytes);
      const g = LogRowsChunk.decode(bytes);
      expect(m.count).toBe(g.count);
      expect(m.rows.equals(g.rows)).toBe(true); // (toEqual walks a Buffer byte by byte: slow at 1 MiB)
      if (size) expect(m.rows.buffer).toBe(bytes.buffer);
    }
  });

  it('reads any valid encoding as the generated reader does: field order, unknown fields, repeats', () => {
    const rows = Buffer.from('abc');
    const parts = [
      Buffer.from([0x10, 0x05]), // count 5
      Buffer.from([0x0a, 0x03, ...rows]), // rows
      Buffer.from([0x18, 0x96, 0x01]), // unknown varint field 3
      Buffer.from([0x22, 0x02, 0x01, 0x02]), // unknown bytes field 4
      Buffer.from([0x29, 1, 2, 3, 4, 5, 6, 7, 8]), // unknown fixed64 field 5
      Buffer.from([0x35, 1, 2, 3, 4]), // unknown fixed32 field 6
      Buffer.from([0x10, 0x07]), // count again: the last wins
      Buffer.from([0x08, 0x01]), // field 1 with the wrong wire type: skipped
    ];
    const bytes = Buffer.concat(parts);
    expect(decodeLogRowsChunk(bytes)).toEqual(LogRowsChunk.decode(bytes));
    expect(decodeLogRowsChunk(bytes)).toEqual({ rows, count: 7 });
  });

  it('refuses a cut or malformed message instead of reading past its end', () => {
    const whole = generated({ rows: randomBytes(200), count: 300 });
    for (let end = 1; end < whole.length; end++) {
      const cut = whole.subarray(0, end);
      let generatedThrew = false;
      try {
        LogRowsChunk.decode(cut);
      } catch {
        generatedThrew = true;
      }
      if (generatedThrew) expect(() => decodeLogRowsChunk(cut)).toThrow('malformed');
      else expect(decodeLogRowsChunk(cut)).toEqual(LogRowsChunk.decode(cut));
    }
    expect(() => decodeLogRowsChunk(Buffer.from([0x0b]))).toThrow('malformed'); // wire type 3 (groups)
    expect(() => decodeLogRowsChunk(Buffer.from([0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]))).toThrow('malformed');
  });

  it('is what the bulk service definition uses for StreamLogs, and only there', () => {
    expect(AuditServiceBulk.streamLogs.responseSerialize).toBe(encodeLogRowsChunk);
    expect(AuditServiceBulk.streamLogs.responseDeserialize).toBe(decodeLogRowsChunk);
    for (const [name, method] of Object.entries(AuditServiceService)) if (name !== 'streamLogs') expect(AuditServiceBulk[name as keyof typeof AuditServiceBulk]).toBe(method);
    expect(AuditServiceBulk.streamLogs.path).toBe(AuditServiceService.streamLogs.path);
  });
});
