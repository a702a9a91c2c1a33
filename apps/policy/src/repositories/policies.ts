import type { Pool, PoolClient } from '@secsvc/shared';
import type { EnginePolicy, PolicyConditions } from '../engine';
import type { PolicyChanges, PolicyFields } from '../domain/policies';

export interface PolicyRow {
  id: string;
  environment: string;
  name: string;
  description: string;
  effect: 'allow' | 'deny';
  principals: string[];
  actions: string[];
  resources: string[];
  conditions: PolicyConditions;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, environment, name, description, effect, principals, actions, resources, conditions, created_at, updated_at';

type Db = Pool | PoolClient;

export const policiesRepository = {
  async insert(db: Db, policy: PolicyFields & { id: string; environment: string }): Promise<PolicyRow> {
    const { rows } = await db.query<PolicyRow>(
      `INSERT INTO policies (id, environment, name, description, effect, principals, actions, resources, conditions)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb) RETURNING ${COLUMNS}`,
      [
        policy.id,
        policy.environment,
        policy.name,
        policy.description,
        policy.effect,
        policy.principals,
        policy.actions,
        policy.resources,
        JSON.stringify(policy.conditions),
      ],
    );
    return rows[0]!;
  },

  /**
   * Serialises creations within one environment for the rest of the transaction (so the count below cannot
   * be raced past the limit by concurrent creates) and returns how many policies the environment holds.
   */
  async lockAndCount(db: PoolClient, environment: string): Promise<number> {
    await db.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`secsvc:policy:create:${environment}`]);
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM policies WHERE environment = $1', [environment]);
    return rows[0]!.n;
  },

  async get(db: Db, environment: string, id: string): Promise<PolicyRow | undefined> {
    const { rows } = await db.query<PolicyRow>(`SELECT ${COLUMNS} FROM policies WHERE environment = $1 AND id = $2`, [environment, id]);
    return rows[0];
  },

  /** Present fields replace the stored ones (arrays and conditions as a whole); updated_at is always set. */
  async update(db: Db, environment: string, id: string, changes: PolicyChanges): Promise<PolicyRow | undefined> {
    const { rows } = await db.query<PolicyRow>(
      `UPDATE policies SET
         name = COALESCE($3, name),
         description = COALESCE($4, description),
         effect = COALESCE($5, effect),
         principals = COALESCE($6, principals),
         actions = COALESCE($7, actions),
         resources = COALESCE($8, resources),
         conditions = COALESCE($9::jsonb, conditions),
         updated_at = clock_timestamp()
       WHERE environment = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [
        environment,
        id,
        changes.name ?? null,
        changes.description ?? null,
        changes.effect ?? null,
        changes.principals ?? null,
        changes.actions ?? null,
        changes.resources ?? null,
        changes.conditions === undefined ? null : JSON.stringify(changes.conditions),
      ],
    );
    return rows[0];
  },

  async delete(db: Db, environment: string, id: string): Promise<boolean> {
    const { rowCount } = await db.query('DELETE FROM policies WHERE environment = $1 AND id = $2', [environment, id]);
    return (rowCount ?? 0) > 0;
  },

  /** Newest first, strictly after `afterId` when given; fetches limit+1 to know whether more exist. */
  async list(db: Db, environment: string, limit: number, afterId?: string): Promise<PolicyRow[]> {
    const { rows } = afterId
      ? await db.query<PolicyRow>(`SELECT ${COLUMNS} FROM policies WHERE environment = $1 AND id < $2 ORDER BY id DESC LIMIT $3`, [
          environment,
          afterId,
          limit + 1,
        ])
      : await db.query<PolicyRow>(`SELECT ${COLUMNS} FROM policies WHERE environment = $1 ORDER BY id DESC LIMIT $2`, [environment, limit + 1]);
    return rows;
  },

  /** Every policy of an environment, in the shape the decision engine reads. */
  async loadForEngine(db: Db, environment: string): Promise<EnginePolicy[]> {
    const { rows } = await db.query<EnginePolicy>(
      'SELECT id, name, effect, principals, actions, resources, conditions FROM policies WHERE environment = $1',
      [environment],
    );
    return rows;
  },
};
