import { createHmac, timingSafeEqual } from 'node:crypto';
import { AppError } from './errors';

const MAC_BYTES = 16;

export interface CursorPayload {
  /** Which list the cursor belongs to, e.g. "users". */
  kind: string;
  environment: string;
  /** Keyset position: the last item's sort key. */
  after: string;
}

function mac(secret: string, data: Buffer): Buffer {
  return createHmac('sha256', secret).update('cursor:').update(data).digest().subarray(0, MAC_BYTES);
}

/** An opaque, tamper-evident cursor `cur_...` (payload + truncated HMAC, base64url). */
export function encodeCursor(payload: CursorPayload, secret: string): string {
  const data = Buffer.from(JSON.stringify([payload.kind, payload.environment, payload.after]));
  return 'cur_' + Buffer.concat([data, mac(secret, data)]).toString('base64url');
}

const invalid = () => AppError.field('cursor', 'invalid or expired cursor');

/** Decodes a cursor made by encodeCursor for the same list and environment; anything else is a 400. */
export function decodeCursor(cursor: string, expected: { kind: string; environment: string }, secret: string): string {
  if (!cursor.startsWith('cur_') || cursor.length > 512 || !/^[A-Za-z0-9_-]+$/.test(cursor.slice(4))) throw invalid();
  const raw = Buffer.from(cursor.slice(4), 'base64url');
  // Only the canonical encoding is accepted: spare bits in the last character must not vary.
  if (raw.length <= MAC_BYTES || raw.toString('base64url') !== cursor.slice(4)) throw invalid();
  const data = raw.subarray(0, raw.length - MAC_BYTES);
  if (!timingSafeEqual(raw.subarray(raw.length - MAC_BYTES), mac(secret, data))) throw invalid();
  let parsed: unknown;
  try {
    parsed = JSON.parse(data.toString('utf8'));
  } catch {
    throw invalid();
  }
  if (!Array.isArray(parsed) || parsed.length !== 3 || !parsed.every((p) => typeof p === 'string')) throw invalid();
  const [kind, environment, after] = parsed as [string, string, string];
  if (kind !== expected.kind || environment !== expected.environment) throw invalid();
  return after;
}

/** The keyset position a list request continues after: validates `limit` (1..max) and decodes `cursor`. */
export function pageRequest(
  req: { limit: number; cursor: string },
  scope: { kind: string; environment: string },
  secret: string,
  max = 100,
): { limit: number; after: string | undefined } {
  if (!Number.isInteger(req.limit) || req.limit < 1 || req.limit > max) throw AppError.field('limit', `must be an integer from 1 to ${max}`);
  return { limit: req.limit, after: req.cursor ? decodeCursor(req.cursor, scope, secret) : undefined };
}

/** A page from `limit + 1` rows fetched newest first: the rows to show, hasMore, and the next cursor. */
export function keysetPage<R extends { id: string }>(
  rows: R[],
  limit: number,
  scope: { kind: string; environment: string },
  secret: string,
): { page: R[]; hasMore: boolean; nextCursor: string } {
  const page = rows.slice(0, limit);
  const hasMore = rows.length > limit;
  return { page, hasMore, nextCursor: hasMore ? encodeCursor({ ...scope, after: page.at(-1)!.id }, secret) : '' };
}
