-- The outbox relay (libs/shared/src/outbox-relay.ts) listens on a channel of its own schema and is notified only
-- by an event that finds no older one unpublished when its transaction commits (the trigger is deferred to the
-- commit): while one waits, the relay is at work and goes round again after every round that published
-- something, until a round finds none. A notification per statement cost every event-writing commit the
-- notification queue's lock and woke the relay of every service.
CREATE OR REPLACE FUNCTION notify_outbox() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM outbox WHERE published_at IS NULL AND seq < NEW.seq) THEN
    PERFORM pg_notify('secsvc_outbox_' || TG_TABLE_SCHEMA, TG_TABLE_SCHEMA);
  END IF;
  RETURN NULL;
END
$$;

DROP TRIGGER outbox_notify ON outbox;
CREATE CONSTRAINT TRIGGER outbox_notify AFTER INSERT ON outbox DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION notify_outbox();
