-- Mail waiting to be delivered (password reset): a durable queue, so a killed replica loses nothing it
-- acknowledged. The RPC inserts the request (no secret); a worker in every replica claims due jobs with
-- FOR UPDATE SKIP LOCKED, composes the message once (the token is stored only sealed, AES-256-GCM under a key
-- derived from SERVER_SECRET, in message_enc), leases the job while it sends (next_attempt_at in the future)
-- and deletes it once the server accepted it. A job whose lease ran out (its replica died) is due again.
CREATE TABLE mail_jobs (
  id              bigserial PRIMARY KEY,
  kind            text NOT NULL,
  environment     text NOT NULL CHECK (environment IN ('live', 'test')),
  request         jsonb NOT NULL DEFAULT '{}',
  message_enc     bytea,
  attempts        int NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  created_at      timestamptz NOT NULL DEFAULT now(),
  last_error      text
);
CREATE INDEX mail_jobs_next_attempt_at ON mail_jobs (next_attempt_at);
