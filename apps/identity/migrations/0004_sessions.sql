-- Sessions: the token is shown once and only its keyed hash (HMAC-SHA-256 under SERVER_SECRET) is stored.
-- Deleting a user deletes their sessions with them.
CREATE TABLE sessions (
  id           text PRIMARY KEY,
  environment  text NOT NULL CHECK (environment IN ('live', 'test')),
  user_id      text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  token_hash   bytea NOT NULL UNIQUE,
  metadata     json NOT NULL DEFAULT '{}',
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  revoked_at   timestamptz
);

CREATE INDEX sessions_user_active ON sessions (user_id, id DESC) WHERE revoked_at IS NULL;

-- Gateways cache session authentications: every change of a session (revocation, deletion) is announced on
-- the same channel as API key changes (notify_api_key_change sends OLD.id).
CREATE TRIGGER sessions_changed
  AFTER UPDATE OR DELETE ON sessions
  FOR EACH ROW EXECUTE FUNCTION notify_api_key_change();
