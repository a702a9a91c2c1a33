/**
 * Tamper evidence of the audit log: the hash chain over real PostgreSQL (heads, signed checkpoints) and chdb (the
 * entries). Each attack is done directly in ClickHouse (or PostgreSQL) and must be found at its position.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createLogger, createPool, type Pool } from '@secsvc/shared';
import { stopTestPostgres, testDatabase, type TestDatabase } from '@secsvc/dev/testing';
import { AuditChain, canonicalEntry, chainHash, ChainKey, chainLink, checkpointValid, GENESIS_HASH } from '../src/chain';
import { openClickHouse, type ClickHouseClient } from '../src/clickhouse';
import { migrateAuditSchema } from '../src/export-jobs';
import { LOG_COLUMNS, type LogRow } from '../src/rows';
import { sampleRow } from './support/rows';
import { LOG_TABLE, migrateClickHouse } from '../src/schema';
import { LogStore } from '../src/store';

const logger = createLogger('chain-test', 'silent');
let db: TestDatabase;
let pool: Pool;
let dir: string;
let ch: ClickHouseClient;
let chain: AuditChain;
let store: LogStore;

beforeAll(async () => {
  db = await testDatabase();
  pool = createPool(db.url, 8, logger, 'audit');
  await migrateAuditSchema(pool, logger);
  dir = await mkdtemp(path.join(os.tmpdir(), 'secsvc-chain-'));
  ch = await openClickHouse({ path: dir });
  await migrateClickHouse(ch);
  chain = new AuditChain(pool, ch, ChainKey.fromSecret('chain-test-secret-0123456789abcdef'), { checkpointEvery: 5, checkpointIntervalMs: 3_600_000 });
  store = new LogStore(ch, chain);
}, 60_000);
afterAll(async () => {
  await ch.close();
  await rm(dir, { recursive: true, force: true });
  await pool.end();
  await db.drop();
  await stopTestPostgres();
});
beforeEach(async () => {
  await ch.command({ query: `TRUNCATE TABLE ${LOG_TABLE}` });
  await pool.query('TRUNCATE audit_chain_heads, audit_chain_checkpoints');
});

const row = (environment = 'live', over: Partial<LogRow> = {}): LogRow => sampleRow({ environment, ...over });

/** 25 entries in live over three batches (checkpoints at 8, 17 and 25: every 5 entries at most), 3 in test. */
async function ingest(): Promise<LogRow[]> {
  const rows = Array.from({ length: 25 }, () => row());
  await store.insert(rows.slice(0, 8));
  await store.insert([...rows.slice(8, 17), row('test'), row('test')]);
  await store.insert([...rows.slice(17), row('test')]);
  return rows;
}

const mutate = (query: string) => ch.command({ query, clickhouse_settings: { mutations_sync: '2' } });
const positionOf = async (id: string) => {
  const rs = await ch.query({ query: `SELECT chain_seq FROM ${LOG_TABLE} WHERE id = {id:String}`, query_params: { id }, format: 'JSONEachRow' });
  return Number((await rs.json<{ chain_seq: string }>())[0]!.chain_seq);
};

test('every entry gets the next position of its environment and a hash over the one before; the chain verifies', async () => {
  const rows = await ingest();
  expect(await Promise.all(rows.slice(0, 3).map((r) => positionOf(r.id)))).toEqual([1, 2, 3]);
  const live = await chain.verify('live');
  expect(live).toMatchObject({ environment: 'live', intact: true, from: 1, to: 25, entriesChecked: 25, head: { position: 25 } });
  expect(live.checkpointsChecked).toBe(3);
  expect(await chain.verify('test')).toMatchObject({ intact: true, entriesChecked: 3, head: { position: 3 } });
  // The first hash is over the genesis: anyone can recompute it from the entry.
  const rs = await ch.query({ query: `SELECT chain_link FROM ${LOG_TABLE} WHERE id = {id:String}`, query_params: { id: rows[0]!.id }, format: 'JSONEachRow' });
  expect(Number((await rs.json<{ chain_link: string }>())[0]!.chain_link)).toBe(chainLink(chainHash(GENESIS_HASH, rows[0]!)));
  // A range in the middle starts from the signed checkpoint before it.
  expect(await chain.verify('live', { from: 12, to: 18 })).toMatchObject({ intact: true, from: 12, to: 18, entriesChecked: 7 });
});

test('checkpoints are signed with the published key', async () => {
  await ingest();
  const checkpoints = await chain.checkpoints('live');
  expect(checkpoints.map((c) => c.position)).toEqual([8, 17, 25]);
  const jwk = chain.key.jwk();
  expect(jwk).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', kid: chain.key.kid });
  for (const c of checkpoints) expect(checkpointValid(c, chain.key.publicKey)).toBe(true);
  // Same secret, same key on every replica; another secret, another key.
  expect(ChainKey.fromSecret('chain-test-secret-0123456789abcdef').kid).toBe(chain.key.kid);
  expect(ChainKey.fromSecret('another-secret-0123456789abcdef').kid).not.toBe(chain.key.kid);
});

test('an edited entry is found at its position', async () => {
  const rows = await ingest();
  await mutate(`ALTER TABLE ${LOG_TABLE} UPDATE actor_email = 'mallory@example.com' WHERE id = '${rows[13]!.id}'`);
  expect(await chain.verify('live')).toMatchObject({ intact: false, firstBreak: { position: 14, id: rows[13]!.id, reason: 'altered' } });
  // The other environment is not affected.
  expect((await chain.verify('test')).intact).toBe(true);
});

test('a deleted entry is found missing', async () => {
  const rows = await ingest();
  await mutate(`ALTER TABLE ${LOG_TABLE} DELETE WHERE id = '${rows[4]!.id}'`);
  expect(await chain.verify('live')).toMatchObject({ intact: false, firstBreak: { position: 5, reason: 'missing' } });
  // The last one too (the head is kept apart from ClickHouse).
  await mutate(`ALTER TABLE ${LOG_TABLE} DELETE WHERE id = '${rows[24]!.id}'`);
  expect(await chain.verify('live', { from: 21 })).toMatchObject({ intact: false, firstBreak: { position: 25, reason: 'missing' } });
});

test('an inserted entry is found: without a position, or at a position already taken', async () => {
  await ingest();
  const forged = row();
  await store.write([{ row: forged, position: 0, hash: '', link: 0 }]);
  expect(await chain.verify('live')).toMatchObject({ intact: false, firstBreak: { position: 0, id: forged.id, reason: 'unchained' } });
  await mutate(`ALTER TABLE ${LOG_TABLE} DELETE WHERE id = '${forged.id}'`);
  const twin = row();
  await store.write([{ row: twin, position: 7, hash: '', link: chainLink(chainHash(GENESIS_HASH, twin)) }]);
  expect(await chain.verify('live')).toMatchObject({ intact: false, firstBreak: { position: 7, reason: 'duplicate' } });
});

test('reordered entries are found', async () => {
  const rows = await ingest();
  await mutate(`ALTER TABLE ${LOG_TABLE} UPDATE chain_seq = if(id = '${rows[2]!.id}', 4, 3) WHERE id IN ('${rows[2]!.id}', '${rows[3]!.id}')`);
  expect(await chain.verify('live')).toMatchObject({ intact: false, firstBreak: { position: 3, reason: 'altered' } });
});

test('rewriting every hash after an edit is caught by the signed checkpoint (or the head) after it', async () => {
  const rows = await ingest();
  // The attacker edits entry 14 and recomputes 14..25 so each hash matches its entry.
  await mutate(`ALTER TABLE ${LOG_TABLE} UPDATE actor_email = 'mallory@example.com' WHERE id = '${rows[13]!.id}'`);
  // (Rows keep 52 bits of each hash; the full ones follow from the genesis and the rows, which the attacker has.)
  let previous = rows.slice(0, 13).reduce((h, r) => chainHash(h, r), GENESIS_HASH);
  for (let i = 13; i < 25; i++) {
    const r = i === 13 ? { ...rows[i]!, actor_email: 'mallory@example.com' } : rows[i]!;
    previous = chainHash(previous, r);
    await mutate(`ALTER TABLE ${LOG_TABLE} UPDATE chain_link = ${chainLink(previous)} WHERE id = '${r.id}'`);
  }
  const verdict = await chain.verify('live');
  expect(verdict.intact).toBe(false);
  expect(verdict.firstBreak).toEqual({ position: 17, id: rows[16]!.id, reason: 'checkpoint_mismatch' });
});

test('a forged or edited checkpoint is refused', async () => {
  await ingest();
  await pool.query(`UPDATE audit_chain_checkpoints SET hash = $1 WHERE environment = 'live' AND position = (SELECT min(position) FROM audit_chain_checkpoints WHERE environment = 'live')`, ['f'.repeat(64)]);
  expect(await chain.verify('live')).toMatchObject({ intact: false, firstBreak: { reason: 'checkpoint_signature' } });
});

test('a redelivered event appears once and the chain stays intact', async () => {
  const rows = await ingest();
  expect(await store.insert([rows[3]!, rows[20]!, row()])).toBe(1);
  expect(await chain.verify('live')).toMatchObject({ intact: true, entriesChecked: 26 });
});

test('a writer that died after its insert (head not moved) is taken over: positions never repeat', async () => {
  await ingest();
  const lost = [row(), row()];
  await expect(
    chain.append(
      'live',
      lost.map((row) => ({ row })),
      async (chained) => {
        await store.write(chained);
        throw new Error('killed after the insert');
      },
      async () => new Set(),
    ),
  ).rejects.toThrow('killed');
  // The head in PostgreSQL did not move; the next batch adopts the rows past it.
  expect(await store.insert([row()])).toBe(1);
  expect(await chain.verify('live')).toMatchObject({ intact: true, entriesChecked: 28, head: { position: 28 } });
});

test('the canonical form lists every stored column, in LOG_COLUMNS order', () => {
  const r = row();
  expect(JSON.parse(canonicalEntry(r))).toEqual(LOG_COLUMNS.map((c) => r[c]));
});

test('rows a dead writer left that do not hash as stored are reported (and verify finds them), ingestion goes on', async () => {
  await ingest();
  const mismatches: number[] = [];
  chain.onMismatch = (_environment, position) => mismatches.push(position);
  try {
    await expect(
      chain.append(
        'live',
        [{ row: row() }],
        async (chained) => {
          await store.write(chained.map((c) => ({ ...c, link: c.link + 1 })));
          throw new Error('killed after a bad insert');
        },
        async () => new Set(),
      ),
    ).rejects.toThrow('killed');
    expect(await store.insert([row()])).toBe(1);
    expect(mismatches).toEqual([26]);
    expect(await chain.verify('live')).toMatchObject({ intact: false, firstBreak: { position: 26, reason: 'altered' } });
  } finally {
    chain.onMismatch = undefined;
  }
});

describe('looking up only the entries that may be stored already (bus positions kept with the head)', () => {
  /** Appends through the store, counting the ids it looks up in ClickHouse. */
  const lookups: string[][] = [];
  const append = (entries: Array<{ row: LogRow; origin?: { partition: number; offset: number; mayRepeat?: boolean } }>) =>
    chain.append(
      'live',
      entries,
      (chained) => store.write(chained),
      async (rows) => {
        lookups.push(rows.map((r) => r.id));
        const rs = await ch.query({ query: `SELECT id FROM ${LOG_TABLE} WHERE id IN {ids:Array(String)}`, query_params: { ids: rows.map((r) => r.id) }, format: 'JSONEachRow' });
        return new Set((await rs.json<{ id: string }>()).map((r) => r.id));
      },
    );
  const at = (partition: number, first: number, rows: LogRow[], mayRepeat?: boolean) => rows.map((row, i) => ({ row, origin: { partition, offset: first + i, ...(mayRepeat && { mayRepeat }) } }));
  const storedCount = async () => Number((await (await ch.query({ query: `SELECT count() AS n FROM ${LOG_TABLE}`, format: 'JSONEachRow' })).json<{ n: string }>())[0]!.n);
  beforeEach(() => void lookups.splice(0));

  test('a head without positions looks everything up once; then only redelivered, flagged and unplaced entries are', async () => {
    const a = Array.from({ length: 6 }, () => row());
    expect(await append(at(0, 1, a.slice(0, 3)))).toBe(3);
    expect(lookups).toEqual([a.slice(0, 3).map((r) => r.id)]);
    // Above the stored offsets: never stored, no lookup.
    expect(await append([...at(0, 4, a.slice(3, 5)), ...at(1, 1, [a[5]!])])).toBe(3);
    expect(lookups).toHaveLength(1);
    const { rows } = await pool.query(`SELECT bus_positions FROM audit_chain_heads WHERE environment = 'live'`);
    expect(rows[0].bus_positions).toEqual({ 0: 5, 1: 1 });
    // Handed over again (at or below the offsets), with new ones after them: only the old ones are looked up.
    const b = [row(), row()];
    expect(await append([...at(0, 4, a.slice(3, 5)), ...at(0, 6, b)])).toBe(2);
    expect(lookups[1]).toEqual(a.slice(3, 5).map((r) => r.id));
    // Flagged by the relay (maybe sent twice) or without a position: looked up even above the offsets.
    const again = { row: a[0]!, origin: { partition: 0, offset: 50, mayRepeat: true } };
    const unplaced = { row: row() };
    expect(await append([again, unplaced, ...at(0, 51, [row()])])).toBe(2);
    expect(lookups[2]).toEqual([a[0]!.id, unplaced.row.id]);
    expect(await storedCount()).toBe(10);
    expect(await chain.verify('live')).toMatchObject({ intact: true, entriesChecked: 10 });
  });

  test('offsets are never lowered: a late batch of an older owner of a partition does not make later records look new', async () => {
    const a = Array.from({ length: 8 }, () => row());
    expect(await append(at(0, 1, a.slice(0, 2)))).toBe(2); // positions set (looked up: no positions yet)
    expect(await append(at(0, 3, a.slice(2, 8)))).toBe(6); // offsets 3..8, stored 8
    // A member that lost the partition finishes offsets 3..4 late: all found, and the stored offset stays 8...
    expect(await append(at(0, 3, a.slice(2, 4)))).toBe(0);
    const { rows } = await pool.query(`SELECT bus_positions FROM audit_chain_heads WHERE environment = 'live'`);
    expect(rows[0].bus_positions).toEqual({ 0: 8 });
    // ...so offsets 5..8 handed over again are still looked up, not stored twice.
    expect(await append(at(0, 5, a.slice(4, 8)))).toBe(0);
    expect(lookups.at(-1)).toEqual(a.slice(4, 8).map((r) => r.id));
    expect(await storedCount()).toBe(8);
    expect(await chain.verify('live')).toMatchObject({ intact: true, entriesChecked: 8 });
  });

  test('entries a dead writer inserted before its head moved are adopted, not stored again when handed over again', async () => {
    const first = [row(), row()];
    expect(await append(at(0, 1, first))).toBe(2);
    const lost = [row(), row(), row()];
    await expect(
      chain.append(
        'live',
        at(0, 3, lost),
        async (chained) => {
          await store.write(chained);
          throw new Error('killed after the insert');
        },
        async () => new Set(),
      ),
    ).rejects.toThrow('killed');
    // The bus hands the same records over again; their offsets are above the stored ones (the head did not move).
    const next = row();
    expect(await append([...at(0, 3, lost), ...at(0, 6, [next])])).toBe(1);
    expect(await storedCount()).toBe(6);
    expect(await chain.verify('live')).toMatchObject({ intact: true, entriesChecked: 6, head: { position: 6 } });
  });

  test('through the store: a redelivered batch from the bus appears once', async () => {
    const rows = Array.from({ length: 5 }, () => row());
    const origins = rows.map((_, i) => ({ partition: 2, offset: 100 + i }));
    expect(await store.insert(rows, origins)).toBe(5);
    expect(await store.insert([...rows, row()], [...origins, { partition: 2, offset: 105 }])).toBe(1);
    expect(await storedCount()).toBe(6);
    expect(await chain.verify('live')).toMatchObject({ intact: true, entriesChecked: 6 });
  });
});
