-- The bus positions (partition → offset, a JSON object) of the events the audit consumer has stored, per
-- environment: the highest offset per partition, moved with the chain head in the transaction that inserts a
-- batch (libs/audit-store/src/chain.ts). An event above its partition's offset has never been stored (offsets
-- grow in publish order, and an event handed over again keeps its offset), so only events at or below it, or
-- flagged by the relay as maybe sent twice, are looked up by id. NULL (heads made before this column): every
-- event is looked up until a batch has set it.
ALTER TABLE audit_chain_heads ADD COLUMN bus_positions jsonb;
