/** One rendered row as an export page carries it (RenderedRows reads them). */
export interface FakeRendered {
  seq?: number;
  ms?: number;
  id: string;
  entry: string;
  meta?: string;
}

/** A LEB128 length, as RowBinary writes it before a string. */
function leb128(n: number): Buffer {
  const out: number[] = [];
  do {
    let byte = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) byte |= 0x80;
    out.push(byte);
  } while (n > 0);
  return Buffer.from(out);
}

const str = (s: string) => {
  const b = Buffer.from(s);
  return [leb128(b.length), b];
};

/**
 * Rows in ClickHouse RowBinary as an export page's query returns them: chain_seq UInt64, the time in ms
 * Int64, then id, entry and metadata, each a LEB128 length and its UTF-8 bytes.
 */
export function rowBinary(rows: FakeRendered[]): Buffer {
  const parts: Buffer[] = [];
  for (const r of rows) {
    const fixed = Buffer.alloc(16);
    fixed.writeBigUInt64LE(BigInt(r.seq ?? 0), 0);
    fixed.writeBigInt64LE(BigInt(r.ms ?? 0), 8);
    parts.push(fixed, ...str(r.id), ...str(r.entry), ...str(r.meta ?? ''));
  }
  return Buffer.concat(parts);
}
