-- Any change to an API key row (revocation, expiry, plan, deletion) is announced on a channel, so every
-- identity replica can tell the gateways at once to drop cached authentications of that key.
CREATE FUNCTION notify_api_key_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('secsvc_credential_changes', OLD.id);
  RETURN NULL;
END;
$$;

CREATE TRIGGER api_keys_changed
  AFTER UPDATE OR DELETE ON api_keys
  FOR EACH ROW EXECUTE FUNCTION notify_api_key_change();
