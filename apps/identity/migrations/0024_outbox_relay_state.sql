-- The outbox relay (libs/shared/src/outbox-relay.ts) records, before a round sends its events to the bus, the
-- round's highest sequence number, committed at once (outside the round's transaction). A row still unpublished
-- at or below it belongs to a round whose publish may have reached the bus before the round failed: the next
-- round sends it flagged (BusRecord.mayRepeat), and the audit consumer checks flagged events against the log by
-- id, while it tells other events it has stored before by their bus position alone. Rows unpublished now may
-- come from a relay that stopped mid-round before this table existed: they start flagged.
CREATE TABLE outbox_relay (
  singleton      boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  unsure_through bigint NOT NULL DEFAULT 0
);
INSERT INTO outbox_relay (unsure_through) SELECT coalesce(max(seq), 0) FROM outbox WHERE published_at IS NULL;
