-- Tamper evidence of the audit log (libs/audit-store/src/chain.ts): the head of each environment's hash chain,
-- locked while a batch is inserted into ClickHouse, and the signed checkpoints. Kept apart from ClickHouse so
-- that write access to the log alone cannot rewrite its proof.
CREATE TABLE audit_chain_heads (
  environment text PRIMARY KEY CHECK (environment IN ('live', 'test')),
  position bigint NOT NULL,
  hash text NOT NULL,
  checkpoint_position bigint NOT NULL,
  checkpoint_at timestamptz NOT NULL,
  -- Entries stored before the chain began (an upgrade): they have no position.
  unchained_before bigint NOT NULL
);

CREATE TABLE audit_chain_checkpoints (
  environment text NOT NULL,
  position bigint NOT NULL,
  hash text NOT NULL,
  signed_at timestamptz NOT NULL,
  kid text NOT NULL,
  signature text NOT NULL,
  PRIMARY KEY (environment, position)
);
