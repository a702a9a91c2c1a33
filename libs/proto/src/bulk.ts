import { makeGenericClientConstructor } from '@grpc/grpc-js';
import { AuditServiceService, type AuditServiceClient, type LogRowsChunk } from './gen/secsvc/audit/v1/audit';

/**
 * LogRowsChunk (an export's rows, ~1 MiB a message) written and read without the generated code's copies: the
 * generated serializer encodes into a writer, concatenates its chunks and copies the result into a Buffer, and
 * the generated reader copies `rows` out of the message. Same bytes as the generated encoding (fields in number
 * order, zero values left out); any valid encoding is read (fields in any order, unknown fields skipped, the
 * last occurrence of a field winning), and `rows` is a view of the received message.
 */

const MAX_VARINT = 10;

/** The bytes of a varint of a non-negative integer below 2^53, or of an int32 (negative: 10 bytes). */
function varintLength(n: number): number {
  if (n < 0) return MAX_VARINT;
  let len = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    len++;
  }
  return len;
}

function writeVarint(out: Buffer, pos: number, n: number): number {
  if (n < 0) {
    // An int32 below zero: its 64-bit two's complement, as protobuf writes it.
    let lo = n >>> 0;
    for (let i = 0; i < 4; i++) {
      out[pos++] = (lo & 0x7f) | 0x80;
      lo >>>= 7;
    }
    out[pos++] = (lo & 0x0f) | 0x70 | 0x80; // bits 28..31, then the sign extension (bits 32..34 set)
    for (let i = 0; i < 4; i++) out[pos++] = 0xff;
    out[pos++] = 0x01;
    return pos;
  }
  while (n >= 0x80) {
    out[pos++] = (n % 128) | 0x80;
    n = Math.floor(n / 128);
  }
  out[pos++] = n;
  return pos;
}

export function encodeLogRowsChunk(m: LogRowsChunk): Buffer {
  const rows = m.rows.length;
  const count = m.count | 0;
  const size = (rows ? 1 + varintLength(rows) + rows : 0) + (count ? 1 + varintLength(count) : 0);
  const out = Buffer.allocUnsafe(size);
  let pos = 0;
  if (rows) {
    out[pos++] = 0x0a; // field 1, length-delimited
    pos = writeVarint(out, pos, rows);
    pos += m.rows.copy(out, pos);
  }
  if (count) {
    out[pos++] = 0x10; // field 2, varint
    pos = writeVarint(out, pos, count);
  }
  return out;
}

const malformed = () => new Error('LogRowsChunk: malformed message');

/** Reads a varint at `pos`: its low 32 bits (as an unsigned number) and where the next field starts. */
function readVarint(b: Buffer, pos: number): [number, number] {
  let value = 0;
  for (let i = 0; i < MAX_VARINT; i++) {
    if (pos >= b.length) throw malformed();
    const byte = b[pos++]!;
    if (i < 5) value |= (byte & 0x7f) << (7 * i);
    if (byte < 0x80) return [value >>> 0, pos];
  }
  throw malformed();
}

export function decodeLogRowsChunk(b: Buffer): LogRowsChunk {
  let rows: Buffer = Buffer.alloc(0);
  let count = 0;
  let pos = 0;
  while (pos < b.length) {
    const [tag, afterTag] = readVarint(b, pos);
    pos = afterTag;
    const field = tag >>> 3;
    const wire = tag & 7;
    if (field === 0) throw malformed();
    if (wire === 0) {
      const [value, next] = readVarint(b, pos);
      if (field === 2) count = value | 0;
      pos = next;
    } else if (wire === 2) {
      const [len, start] = readVarint(b, pos);
      if (start + len > b.length) throw malformed();
      if (field === 1) rows = b.subarray(start, start + len);
      pos = start + len;
    } else if (wire === 1) pos += 8;
    else if (wire === 5) pos += 4;
    else throw malformed();
    if (pos > b.length) throw malformed();
  }
  return { rows, count };
}

/** The audit service's definition with StreamLogs' messages through the functions above (server and client). */
export const AuditServiceBulk: typeof AuditServiceService = {
  ...AuditServiceService,
  streamLogs: { ...AuditServiceService.streamLogs, responseSerialize: encodeLogRowsChunk, responseDeserialize: decodeLogRowsChunk },
};

/** The audit service's client, StreamLogs read with decodeLogRowsChunk. */
export const AuditServiceBulkClient = makeGenericClientConstructor(AuditServiceBulk, 'secsvc.audit.v1.AuditService') as unknown as typeof AuditServiceClient;
