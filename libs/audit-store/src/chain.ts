import { createHash, createPrivateKey, createPublicKey, hash, hkdfSync, sign, verify, type KeyObject } from 'node:crypto';
import { withTransaction, type BusPosition, type Pool, type PoolClient } from '@secsvc/shared';
import type { ClickHouseClient } from './clickhouse';
import { LOG_COLUMNS, type LogRow } from './rows';
import { LOG_TABLE } from './schema';

// Tamper evidence. Every entry stored gets a position in its environment's chain, in ingestion order, and the
// hash SHA-256(previous hash, "\n", canonical form of the entry). The head of each chain lives in PostgreSQL,
// locked while a batch is inserted, so replicas take turns; every CHAIN_CHECKPOINT_EVERY entries (or minute) a
// checkpoint (position, hash) is signed with an Ed25519 key derived from SERVER_SECRET and kept in
// PostgreSQL. Anyone with write access to ClickHouse alone can edit, delete, insert or reorder rows, but not
// without breaking a hash, a position or a signed checkpoint.

export const GENESIS_HASH = '0'.repeat(64);

/**
 * The entry as hashed: its stored fields in LOG_COLUMNS order as a JSON array (the timestamp ISO 8601 with
 * milliseconds, UTC, as rows carry it; coordinates as numbers or null).
 */
export function canonicalEntry(r: LogRow): string {
  return JSON.stringify([
    r.id, r.environment, r.timestamp, r.event, r.actor_id, r.actor_email, r.actor_type, r.target_id, r.target_type, r.ip,
    r.user_agent, r.city, r.country, r.region, r.lat === null ? null : Number(r.lat), r.lng === null ? null : Number(r.lng), r.result, r.trace_id, r.metadata, r.actor_name,
  ]);
}

/**
 * What each row keeps of the chain hash at its position: its first 52 bits (a number JavaScript holds exactly).
 * It locates the first altered entry; the full hashes, which an attacker who rewrites rows cannot make agree,
 * are in the signed checkpoints and the head.
 */
export const chainLink = (hash: string): number => parseInt(hash.slice(0, 13), 16);

export function chainHash(previous: string, r: LogRow): string {
  return hashCanonical(previous, canonicalEntry(r));
}

/** chainHash of an entry whose canonical form (canonicalEntry) is already made. */
export function hashCanonical(previous: string, canonical: string): string {
  // One-shot hashing: about half the cost of a Hash object per entry.
  return hash('sha256', `${previous}\n${canonical}`);
}

export interface Checkpoint {
  environment: string;
  position: number;
  hash: string;
  signedAt: string;
  kid: string;
  signature: string;
}

const signedText = (c: Omit<Checkpoint, 'kid' | 'signature'>) => `secsvc-audit-checkpoint-v1\n${c.environment}\n${c.position}\n${c.hash}\n${c.signedAt}`;

/** The checkpoint signing key: Ed25519, derived from SERVER_SECRET (every replica has the same); its public half is published as a JWK. */
export class ChainKey {
  readonly kid: string;
  private constructor(
    private readonly privateKey: KeyObject,
    readonly publicKey: KeyObject,
  ) {
    this.kid = 'ck_' + createHash('sha256').update(publicKey.export({ format: 'der', type: 'spki' })).digest('hex').slice(0, 16);
  }

  static fromSecret(secret: string): ChainKey {
    const seed = Buffer.from(hkdfSync('sha256', secret, 'secsvc', 'audit chain checkpoint key v1', 32));
    // PKCS#8 of an Ed25519 private key: a fixed 16-byte prefix and the 32-byte seed.
    const privateKey = createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]), format: 'der', type: 'pkcs8' });
    return new ChainKey(privateKey, createPublicKey(privateKey));
  }

  sign(c: Omit<Checkpoint, 'kid' | 'signature'>): Checkpoint {
    return { ...c, kid: this.kid, signature: this.signText(signedText(c)) };
  }

  /** Ed25519 over the text, base64url. */
  signText(text: string): string {
    return sign(null, Buffer.from(text), this.privateKey).toString('base64url');
  }

  /** The JWKS entry (OKP, Ed25519) that verifies checkpoints and export manifests offline. */
  jwk(): Record<string, string> {
    return { ...(this.publicKey.export({ format: 'jwk' }) as Record<string, string>), kid: this.kid, alg: 'EdDSA', use: 'sig' };
  }
}

export function checkpointValid(c: Checkpoint, key: KeyObject): boolean {
  try {
    return verify(null, Buffer.from(signedText(c)), key, Buffer.from(c.signature, 'base64url'));
  } catch {
    return false;
  }
}

export interface ChainOptions {
  /** A checkpoint after this many entries of an environment... */
  checkpointEvery: number;
  /** ...or when the last one is older than this. */
  checkpointIntervalMs: number;
}

interface Head {
  position: number;
  hash: string;
  checkpointPosition: number;
  checkpointAt: Date;
  /** Per partition, the highest bus offset stored in this environment; null: unknown (see needsLookup). */
  busPositions: Record<string, number> | null;
  /** Ids of the rows adopted from a dead writer while locking (they are stored). */
  adopted: Set<string>;
}

/** Where an entry came from on the bus (BusRecord.position and mayRepeat). */
export interface EntryOrigin extends BusPosition {
  mayRepeat?: boolean;
}

/** An entry to append, with where it came from on the bus (none: looked up by id). */
export interface IncomingEntry {
  row: LogRow;
  origin?: EntryOrigin;
  /** canonicalEntry(row), when made already. */
  canonical?: string;
}

/**
 * Whether an entry may be stored already, so that it must be looked up by id: it comes from nowhere known, the
 * relay may have sent it twice, the environment's positions are unknown, or it sits at or below the highest
 * offset stored from its partition (a record handed over again keeps its offset). Above it, it has never been
 * stored: the consumer handles each partition's records in offset order.
 */
function needsLookup(origin: EntryOrigin | undefined, positions: Record<string, number> | null): boolean {
  if (!origin || origin.mayRepeat || positions === null) return true;
  const last = positions[origin.partition];
  return last !== undefined && origin.offset <= last;
}

export interface ChainedRow {
  row: LogRow;
  /** canonicalEntry(row): what the hash covers, and (with the position and link appended) the row as inserted. */
  canonical: string;
  position: number;
  hash: string;
  /** chainLink(hash): what the row stores. */
  link: number;
}

export type ChainBreakReason = 'altered' | 'missing' | 'duplicate' | 'checkpoint_mismatch' | 'checkpoint_signature' | 'unchained';

export interface ChainVerdict {
  environment: string;
  intact: boolean;
  from: number;
  to: number;
  entriesChecked: number;
  checkpointsChecked: number;
  head: { position: number; hash: string };
  firstBreak?: { position: number; id?: string; reason: ChainBreakReason };
}

const num = (v: unknown) => Number(v);
/** ClickHouse's "YYYY-MM-DD hh:mm:ss.sss" (UTC) as rows carry it: ISO 8601 with Z. */
const isoTimestamp = (t: string) => (t.includes('T') ? t : `${t.replace(' ', 'T')}Z`);

/** The chains of every environment: appending batches (with the insert into ClickHouse) and verifying ranges. */
export class AuditChain {
  /** Told when rows adopted from a dead writer do not hash as stored (logged by the service). */
  onMismatch?: (environment: string, position: number) => void;

  constructor(
    private readonly pool: Pool,
    private readonly ch: ClickHouseClient,
    readonly key: ChainKey,
    private readonly options: ChainOptions = { checkpointEvery: 1000, checkpointIntervalMs: 60_000 },
  ) {}

  /**
   * Appends the entries of one environment (distinct ids, in bus order) that are not stored yet, and returns how
   * many that was. Under the environment's head lock: the entries that may be stored already (needsLookup) are
   * looked up with `stored`, which returns the ids of those it finds; the rest get the next positions and
   * hashes and are inserted with `insert`; then the head and its bus positions move (and a checkpoint is signed
   * when due), only after the insert resolved. A writer that died after its insert left rows past the stored
   * head: they are adopted first, so positions never repeat and those entries are not stored twice.
   */
  async append(
    environment: string,
    entries: IncomingEntry[],
    insert: (chained: ChainedRow[]) => Promise<void>,
    stored: (rows: LogRow[]) => Promise<Set<string>>,
  ): Promise<number> {
    if (entries.length === 0) return 0;
    return withTransaction(this.pool, async (db) => {
      const head = await this.lockHead(db, environment);
      const candidates = entries.filter((e) => !head.adopted.has(e.row.id));
      const doubtful = candidates.filter((e) => needsLookup(e.origin, head.busPositions));
      const found = doubtful.length > 0 ? await stored(doubtful.map((e) => e.row)) : undefined;
      const fresh = found ? candidates.filter((e) => !found.has(e.row.id)) : candidates;
      let { position, hash } = head;
      const chained = fresh.map(({ row, canonical = canonicalEntry(row) }) => {
        position += 1;
        hash = hashCanonical(hash, canonical);
        return { row, canonical, position, hash, link: chainLink(hash) };
      });
      if (chained.length > 0) await insert(chained);
      // The highest offset per partition, never lowered (a late batch of an older owner of a partition must not
      // make later records look new).
      const busPositions = { ...head.busPositions };
      let moved = false;
      for (const { origin } of entries) {
        if (origin && !(origin.offset <= (busPositions[origin.partition] ?? -1))) {
          busPositions[origin.partition] = origin.offset;
          moved = true;
        }
      }
      if (chained.length === 0 && !moved) return 0;
      const now = new Date();
      const checkpoint =
        chained.length > 0 && (position - head.checkpointPosition >= this.options.checkpointEvery || now.getTime() - head.checkpointAt.getTime() >= this.options.checkpointIntervalMs);
      if (checkpoint) await this.writeCheckpoint(db, environment, position, hash, now);
      await db.query(
        `UPDATE audit_chain_heads SET position = $2, hash = $3${moved ? ', bus_positions = $4' : ''}${checkpoint ? `, checkpoint_position = $2, checkpoint_at = $${moved ? 5 : 4}` : ''} WHERE environment = $1`,
        [environment, position, hash, ...(moved ? [JSON.stringify(busPositions)] : []), ...(checkpoint ? [now] : [])],
      );
      return chained.length;
    });
  }

  /** Signs a checkpoint at the current head of `environment` now (for an export manifest, or on demand). */
  async checkpointNow(environment: string): Promise<Checkpoint | undefined> {
    return withTransaction(this.pool, async (db) => {
      const head = await this.lockHead(db, environment);
      if (head.position === 0) return undefined;
      const now = new Date();
      const c = await this.writeCheckpoint(db, environment, head.position, head.hash, now);
      await db.query('UPDATE audit_chain_heads SET checkpoint_position = $2, checkpoint_at = $3 WHERE environment = $1', [environment, head.position, now]);
      return c;
    });
  }

  private async writeCheckpoint(db: PoolClient, environment: string, position: number, hash: string, at: Date): Promise<Checkpoint> {
    const c = this.key.sign({ environment, position, hash, signedAt: at.toISOString() });
    await db.query(
      `INSERT INTO audit_chain_checkpoints (environment, position, hash, signed_at, kid, signature) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (environment, position) DO NOTHING`,
      [environment, position, hash, at, c.kid, c.signature],
    );
    return c;
  }

  private async lockHead(db: PoolClient, environment: string): Promise<Head> {
    const select = () =>
      db.query<{ position: string; hash: string; checkpoint_position: string; checkpoint_at: Date; bus_positions: Record<string, number> | null }>(
        'SELECT position, hash, checkpoint_position, checkpoint_at, bus_positions FROM audit_chain_heads WHERE environment = $1 FOR UPDATE',
        [environment],
      );
    let { rows } = await select();
    if (!rows[0]) {
      await db.query(
        `INSERT INTO audit_chain_heads (environment, position, hash, checkpoint_position, checkpoint_at, unchained_before)
         VALUES ($1, 0, $2, 0, 'epoch', $3) ON CONFLICT (environment) DO NOTHING`,
        // The first batch is checkpointed at once ('epoch'). Entries stored before the chain existed (an
        // upgrade) stay unchained; that count is remembered.
        [environment, GENESIS_HASH, await this.unchainedCount(environment)],
      );
      ({ rows } = await select());
    }
    const head: Head = {
      position: num(rows[0]!.position),
      hash: rows[0]!.hash,
      checkpointPosition: num(rows[0]!.checkpoint_position),
      checkpointAt: rows[0]!.checkpoint_at,
      busPositions: rows[0]!.bus_positions,
      adopted: new Set(),
    };
    const ahead = await this.ch.query({
      query: `SELECT max(chain_seq) AS last FROM ${LOG_TABLE} WHERE environment = {env:String} AND chain_seq > {pos:UInt64}`,
      query_params: { env: environment, pos: head.position },
      format: 'JSONEachRow',
    });
    const last = num((await ahead.json<{ last: string | number }>())[0]?.last ?? 0);
    if (last > head.position) await this.adopt(environment, head, last);
    return head;
  }

  /**
   * Rows a writer inserted past the head before it died (its transaction, and the head's move, rolled back):
   * their hashes are computed again from the head, in order, and the head moves past them.
   */
  private async adopt(environment: string, head: Head, last: number): Promise<void> {
    const rs = await this.ch.query({
      query: `SELECT ${[...LOG_COLUMNS, 'chain_seq', 'chain_link'].join(', ')} FROM ${LOG_TABLE} WHERE environment = {env:String} AND chain_seq > {pos:UInt64} AND chain_seq <= {last:UInt64} ORDER BY chain_seq`,
      query_params: { env: environment, pos: head.position, last },
      format: 'JSONEachRow',
      clickhouse_settings: { date_time_output_format: 'iso' },
    });
    for (const r of await rs.json<LogRow & { chain_seq: string | number; chain_link: string | number }>()) {
      const hash = chainHash(head.hash, { ...r, timestamp: isoTimestamp(r.timestamp) });
      if (num(r.chain_seq) !== head.position + 1 || chainLink(hash) !== num(r.chain_link)) {
        // Not what the dead writer computed: verify will report it at this position; ingestion goes on.
        this.onMismatch?.(environment, num(r.chain_seq));
      }
      head.position = num(r.chain_seq);
      head.hash = hash;
      head.adopted.add(r.id);
    }
  }

  private async unchainedCount(environment: string): Promise<number> {
    const rs = await this.ch.query({ query: `SELECT count() AS n FROM ${LOG_TABLE} WHERE environment = {env:String} AND chain_seq = 0`, query_params: { env: environment }, format: 'JSONEachRow' });
    return num((await rs.json<{ n: string }>())[0]?.n ?? 0);
  }

  /** The last checkpoint of `environment` signed at or before `at`. */
  async checkpointAt(environment: string, at: Date): Promise<Checkpoint | undefined> {
    const { rows } = await this.pool.query<{ position: string; hash: string; signed_at: Date; kid: string; signature: string }>(
      'SELECT position, hash, signed_at, kid, signature FROM audit_chain_checkpoints WHERE environment = $1 AND signed_at <= $2 ORDER BY position DESC LIMIT 1',
      [environment, at],
    );
    const r = rows[0];
    return r && { environment, position: num(r.position), hash: r.hash, signedAt: r.signed_at.toISOString(), kid: r.kid, signature: r.signature };
  }

  async checkpoints(environment: string): Promise<Checkpoint[]> {
    const { rows } = await this.pool.query<{ position: string; hash: string; signed_at: Date; kid: string; signature: string }>(
      'SELECT position, hash, signed_at, kid, signature FROM audit_chain_checkpoints WHERE environment = $1 ORDER BY position',
      [environment],
    );
    return rows.map((r) => ({ environment, position: num(r.position), hash: r.hash, signedAt: r.signed_at.toISOString(), kid: r.kid, signature: r.signature }));
  }

  /**
   * Recomputes positions `from`..`to` (default: the whole chain) from the signed checkpoint before them: every
   * position present once, every hash as computed, every checkpoint on the way matching and validly signed, and
   * no entry without a position beyond those stored before the chain began. The first break is reported.
   */
  async verify(environment: string, range: { from?: number; to?: number } = {}, pageSize = 10_000): Promise<ChainVerdict> {
    const { rows: heads } = await this.pool.query<{ position: string; hash: string; unchained_before: string }>(
      'SELECT position, hash, unchained_before FROM audit_chain_heads WHERE environment = $1',
      [environment],
    );
    const head = { position: num(heads[0]?.position ?? 0), hash: heads[0]?.hash ?? GENESIS_HASH };
    const from = Math.max(1, range.from ?? 1);
    const to = Math.min(range.to ?? head.position, head.position);
    const verdict: ChainVerdict = { environment, intact: true, from, to, entriesChecked: 0, checkpointsChecked: 0, head };
    const broken = (position: number, reason: ChainBreakReason, id?: string): ChainVerdict => ({ ...verdict, intact: false, firstBreak: { position, reason, ...(id && { id }) } });

    const checkpoints = await this.checkpoints(environment);
    for (const c of checkpoints) {
      if (c.kid !== this.key.kid || !checkpointValid(c, this.key.publicKey)) return broken(c.position, 'checkpoint_signature');
    }
    const unchained = await this.unchainedCount(environment);
    if (unchained > num(heads[0]?.unchained_before ?? 0)) {
      const rs = await this.ch.query({ query: `SELECT id FROM ${LOG_TABLE} WHERE environment = {env:String} AND chain_seq = 0 ORDER BY timestamp DESC LIMIT 1`, query_params: { env: environment }, format: 'JSONEachRow' });
      return broken(0, 'unchained', (await rs.json<{ id: string }>())[0]?.id);
    }
    if (to < from) return verdict;

    // Start after the last checkpoint before `from` (its hash is signed), or at the genesis.
    const anchor = [...checkpoints].reverse().find((c) => c.position < from);
    let previous = anchor?.hash ?? GENESIS_HASH;
    let expected = (anchor?.position ?? 0) + 1;
    const byPosition = new Map(checkpoints.map((c) => [c.position, c]));
    const columns = [...LOG_COLUMNS, 'chain_seq', 'chain_link'].join(', ');
    while (expected <= to) {
      const rs = await this.ch.query({
        query: `SELECT ${columns} FROM ${LOG_TABLE} WHERE environment = {env:String} AND chain_seq >= {lo:UInt64} AND chain_seq <= {hi:UInt64} ORDER BY chain_seq, id LIMIT {lim:UInt32}`,
        query_params: { env: environment, lo: expected, hi: to, lim: pageSize },
        format: 'JSONEachRow',
      });
      const page = await rs.json<LogRow & { chain_seq: string | number; chain_link: string | number }>();
      if (page.length === 0) return broken(expected, 'missing');
      for (const r of page) {
        const position = num(r.chain_seq);
        if (position < expected) return broken(position, 'duplicate', r.id);
        if (position > expected) return broken(expected, 'missing');
        const hash = chainHash(previous, { ...r, timestamp: isoTimestamp(r.timestamp) });
        if (chainLink(hash) !== num(r.chain_link)) return broken(position, 'altered', r.id);
        const c = byPosition.get(position);
        if (c) {
          if (c.hash !== hash) return broken(position, 'checkpoint_mismatch', r.id);
          verdict.checkpointsChecked++;
        }
        if (position >= from) verdict.entriesChecked++;
        previous = hash;
        expected = position + 1;
      }
    }
    // A second row at a position a page boundary hid, and the head (kept apart from ClickHouse) itself.
    const start = (anchor?.position ?? 0) + 1;
    const dup = await this.ch.query({
      query: `SELECT chain_seq FROM ${LOG_TABLE} WHERE environment = {env:String} AND chain_seq >= {lo:UInt64} AND chain_seq <= {hi:UInt64} GROUP BY chain_seq HAVING count() > 1 ORDER BY chain_seq LIMIT 1`,
      query_params: { env: environment, lo: start, hi: to },
      format: 'JSONEachRow',
    });
    const [twice] = await dup.json<{ chain_seq: string | number }>();
    if (twice) return broken(num(twice.chain_seq), 'duplicate');
    if (to === head.position && previous !== head.hash) return broken(to, 'checkpoint_mismatch');
    return verdict;
  }
}

/** What an export manifest says of its file, signed with the chain key (verifiable offline: scripts/verify-export.js). */
export interface ExportManifest {
  version: 1;
  exportId: string;
  environment: string;
  format: string;
  from: string;
  to: string;
  events: string[];
  query: string;
  file: { sha256: string; sizeBytes: number; records: number };
  /** The lowest and highest chain positions of the file's entries (null when none was chained). */
  positions: { first: number; last: number } | null;
  completedAt: string;
  /** The environment's last signed checkpoint when the export completed: where the log stood. */
  checkpoint: Checkpoint | null;
  kid: string;
  signature: string;
}

/** The signed text: a fixed prefix and the manifest without its signature, as JSON in this key order. */
export const manifestSignedText = (m: Omit<ExportManifest, 'signature'>) => `secsvc-export-manifest-v1\n${JSON.stringify(m)}`;

export function signExportManifest(key: ChainKey, m: Omit<ExportManifest, 'version' | 'kid' | 'signature'>): ExportManifest {
  const unsigned: Omit<ExportManifest, 'signature'> = {
    version: 1,
    exportId: m.exportId,
    environment: m.environment,
    format: m.format,
    from: m.from,
    to: m.to,
    events: m.events,
    query: m.query,
    file: { sha256: m.file.sha256, sizeBytes: m.file.sizeBytes, records: m.file.records },
    positions: m.positions,
    completedAt: m.completedAt,
    checkpoint: m.checkpoint,
    kid: key.kid,
  };
  return { ...unsigned, signature: key.signText(manifestSignedText(unsigned)) };
}
