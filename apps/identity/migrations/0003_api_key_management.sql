-- API key management: custom rate limits, last use, and rotation with a grace period for the previous secret.
ALTER TABLE api_keys ADD COLUMN rate_limit integer CHECK (rate_limit > 0);
ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;
ALTER TABLE api_keys ADD COLUMN previous_key_hash bytea;
ALTER TABLE api_keys ADD COLUMN previous_expires_at timestamptz;

CREATE UNIQUE INDEX api_keys_previous_key_hash ON api_keys (previous_key_hash) WHERE previous_key_hash IS NOT NULL;
CREATE INDEX api_keys_environment_id ON api_keys (environment, id DESC);

-- Recording a use (last_used_at) is not a change anyone's cache needs to hear about.
CREATE OR REPLACE FUNCTION notify_api_key_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' OR (to_jsonb(OLD) - 'last_used_at') IS DISTINCT FROM (to_jsonb(NEW) - 'last_used_at') THEN
    PERFORM pg_notify('secsvc_credential_changes', OLD.id);
  END IF;
  RETURN NULL;
END;
$$;
