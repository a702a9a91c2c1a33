-- Wakes the outbox relay (libs/shared/src/outbox-relay.ts) as soon as events are committed; the relay also
-- polls, so a missed notification only delays delivery. The payload is the schema of the outbox.
CREATE FUNCTION notify_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('secsvc_outbox', TG_TABLE_SCHEMA);
  RETURN NULL;
END
$$;

CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH STATEMENT EXECUTE FUNCTION notify_outbox();
