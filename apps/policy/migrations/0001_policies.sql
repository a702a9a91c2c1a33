-- Access policies and the transactional outbox of the policy service (schema `policy`).
-- Every row carries its environment: live and test policies never mix.

CREATE TABLE policies (
  id          text PRIMARY KEY,
  environment text NOT NULL CHECK (environment IN ('live', 'test')),
  name        text NOT NULL,
  description text NOT NULL DEFAULT '',
  effect      text NOT NULL CHECK (effect IN ('allow', 'deny')),
  principals  text[] NOT NULL,
  actions     text[] NOT NULL,
  resources   text[] NOT NULL,
  -- {} or {"ip": {"allowlist": [cidr, ...]}} (validated by the service)
  conditions  jsonb NOT NULL DEFAULT '{}',
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Keyset pagination, newest first (ids are time-sortable); also serves the per-environment full load.
CREATE INDEX policies_environment_id ON policies (environment, id DESC);

-- Every replica keeps the policies of each environment in its decision engine: announce any change with the
-- environment as payload, so each replica reloads that environment's data document. Notifications are sent
-- at commit (several in one transaction with the same payload are delivered once).
CREATE FUNCTION notify_policy_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM pg_notify('secsvc_policy_changes', OLD.environment);
  ELSE
    PERFORM pg_notify('secsvc_policy_changes', NEW.environment);
    IF TG_OP = 'UPDATE' AND OLD.environment IS DISTINCT FROM NEW.environment THEN
      PERFORM pg_notify('secsvc_policy_changes', OLD.environment);
    END IF;
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER policies_changed
  AFTER INSERT OR UPDATE OR DELETE ON policies
  FOR EACH ROW EXECUTE FUNCTION notify_policy_change();

-- Events written in the same transaction as the change that caused them; relayed to the event bus.
CREATE TABLE outbox (
  seq          bigserial PRIMARY KEY,
  event_id     text NOT NULL UNIQUE,
  environment  text NOT NULL CHECK (environment IN ('live', 'test')),
  event_type   text NOT NULL,
  -- Partition key on the bus (per-actor ordering).
  event_key    text NOT NULL,
  payload      jsonb NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  published_at timestamptz
);
CREATE INDEX outbox_unpublished ON outbox (seq) WHERE published_at IS NULL;
