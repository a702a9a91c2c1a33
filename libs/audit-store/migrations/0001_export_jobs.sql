-- The audit context's Postgres schema (`audit`), shared by apps/audit and apps/export-worker through
-- libs/audit-store: export jobs and the transactional outbox of log.export.* events.

CREATE TABLE export_jobs (
  id                text PRIMARY KEY,                       -- exp_...
  environment       text NOT NULL CHECK (environment IN ('live', 'test')),
  status            text NOT NULL CHECK (status IN ('processing', 'completed', 'failed', 'expired')),
  format            text NOT NULL CHECK (format IN ('json', 'csv', 'ndjson')),
  from_time         timestamptz NOT NULL,
  to_time           timestamptz NOT NULL,
  events            text[] NOT NULL DEFAULT '{}',
  query             text NOT NULL DEFAULT '',
  estimated_records bigint NOT NULL DEFAULT 0,
  processed_records bigint NOT NULL DEFAULT 0,
  total_records     bigint,
  file_size_bytes   bigint,
  sha256            text,
  object_key        text,
  -- Claims so far; a claim whose lease lapsed (worker killed) counts as a failed attempt.
  attempts          integer NOT NULL DEFAULT 0,
  lease_token       text,
  lease_expires_at  timestamptz,
  worker_id         text,
  run_after         timestamptz NOT NULL DEFAULT now(),
  error_code        text,
  error_message     text,
  -- Who asked (actor, context, authMethod) and the request id: the actor of the job's events.
  requested_by      jsonb NOT NULL,
  trace_id          text NOT NULL DEFAULT '',
  created_at        timestamptz NOT NULL DEFAULT now(),
  started_at        timestamptz,
  completed_at      timestamptz,
  expires_at        timestamptz,
  CHECK (from_time < to_time)
);
-- Claimable jobs, oldest first.
CREATE INDEX export_jobs_claimable ON export_jobs (created_at) WHERE status = 'processing';
-- Completed files due for deletion.
CREATE INDEX export_jobs_expiring ON export_jobs (expires_at) WHERE status = 'completed';

-- Wakes idle workers as soon as a job is committed (they also poll).
CREATE FUNCTION notify_export_job() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('secsvc_export_jobs', TG_TABLE_SCHEMA);
  RETURN NULL;
END
$$;
CREATE TRIGGER export_jobs_notify AFTER INSERT ON export_jobs FOR EACH STATEMENT EXECUTE FUNCTION notify_export_job();

-- Events written in the same transaction as the change that caused them; relayed to the event bus
-- (libs/shared/src/outbox-relay.ts), consumed back into the audit log like every other service's.
CREATE TABLE outbox (
  seq          bigserial PRIMARY KEY,
  event_id     text NOT NULL UNIQUE,
  environment  text NOT NULL CHECK (environment IN ('live', 'test')),
  event_type   text NOT NULL,
  event_key    text NOT NULL,
  payload      jsonb NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  published_at timestamptz
);
CREATE INDEX outbox_unpublished ON outbox (seq) WHERE published_at IS NULL;

CREATE FUNCTION notify_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('secsvc_outbox', TG_TABLE_SCHEMA);
  RETURN NULL;
END
$$;
CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH STATEMENT EXECUTE FUNCTION notify_outbox();
