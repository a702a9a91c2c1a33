import { keysetPage, pageRequest, withTransaction, type EventInput, type Pool, type PoolClient } from '@secsvc/shared';

// What the identity services are given instead of importing: where reads and transactions go, and the outbox.
// The repositories themselves are given to each service as the objects of src/repositories (SQL only); a unit
// test gives in-memory fakes of the same shape (services/testing/fakes.ts).

/** A database handle as the repositories take it: the pool, or a transaction's client. */
export type Db = Pool | PoolClient;

/** Where a service's statements go: the pool for reads and lone writes, transactions for changes with their events. */
export interface Database {
  /** Reads (and single statements) outside any transaction. */
  readonly pool: Db;
  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: PoolClient) => Promise<T>): Promise<T>;
}

/** PostgreSQL: the pool, and withTransaction over it. */
export function postgresDatabase(pool: Pool): Database {
  return { pool, transaction: (fn) => withTransaction(pool, fn) };
}

/** Identity's outbox: an event written with `db` (a transaction's client: exactly when its change commits). */
export interface Outbox {
  append(db: Db, event: EventInput): Promise<string>;
  /** Several events in one statement (at most 1,000). */
  appendAll(db: Db, events: EventInput[]): Promise<string[]>;
}

/** A page request as the list RPCs take it: a size and the signed cursor of the previous page ('' for the first). */
export interface PageInput {
  limit: number;
  cursor: string;
}

export interface Page<R> {
  page: R[];
  hasMore: boolean;
  nextCursor: string;
}

/**
 * One keyset page of `kind` in `environment`: the cursor is checked (signed for that kind and environment under
 * `secret`), `fetch` is asked for `limit + 1` rows after it, and the next cursor is signed.
 */
export async function listPage<R extends { id: string }>(
  secret: string,
  kind: string,
  environment: string,
  input: PageInput,
  fetch: (limit: number, after: string | undefined) => Promise<R[]>,
  max?: number,
): Promise<Page<R>> {
  const scope = { kind, environment };
  const { limit, after } = pageRequest(input, scope, secret, max);
  return keysetPage(await fetch(limit, after), limit, scope, secret);
}

/** Where a service reports what it could not do but does not fail for (the process logger). */
export interface WarningLog {
  warn(obj: object, msg: string): void;
}
