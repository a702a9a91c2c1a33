-- OAuth 2.0 authorization server: clients, authorization codes, grants (one per authorization: the family
-- of its refresh tokens and the `sid` of its access tokens), refresh tokens and remembered consents.
-- Client secrets, codes and refresh tokens are stored only as HMAC-SHA-256 under SERVER_SECRET.

CREATE TABLE oauth_clients (
  id           text PRIMARY KEY,
  environment  text NOT NULL CHECK (environment IN ('live', 'test')),
  name         text NOT NULL,
  type         text NOT NULL CHECK (type IN ('public', 'confidential')),
  secret_hash  bytea,
  redirect_uris text[] NOT NULL DEFAULT '{}',
  scopes       text[] NOT NULL,
  first_party  boolean NOT NULL DEFAULT false,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  CHECK ((type = 'confidential') = (secret_hash IS NOT NULL))
);
CREATE INDEX oauth_clients_environment_id ON oauth_clients (environment, id DESC);

-- Gateways cache client authentications (introspection): announce every change of a client.
CREATE TRIGGER oauth_clients_changed
  AFTER UPDATE OR DELETE ON oauth_clients
  FOR EACH ROW EXECUTE FUNCTION notify_api_key_change();

-- A grant: what one authorization (or one client_credentials token) issued. Its id is the `sid` claim of
-- its access tokens, so ending it (revocation, reuse detected, client or user deleted) is announced like an
-- ended session and gateways refuse its access tokens at once.
CREATE TABLE oauth_grants (
  id             text PRIMARY KEY,
  environment    text NOT NULL CHECK (environment IN ('live', 'test')),
  client_id      text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
  -- NULL for client_credentials (the token acts as the client).
  user_id        text REFERENCES users (id) ON DELETE CASCADE,
  scopes         text[] NOT NULL,
  auth_time      timestamptz,
  created_at     timestamptz NOT NULL DEFAULT now(),
  revoked_at     timestamptz,
  revoked_reason text
);
CREATE INDEX oauth_grants_client_active ON oauth_grants (client_id) WHERE revoked_at IS NULL;
CREATE INDEX oauth_grants_user_active ON oauth_grants (user_id) WHERE revoked_at IS NULL;
CREATE INDEX oauth_grants_revoked_at ON oauth_grants (revoked_at) WHERE revoked_at IS NOT NULL;

-- Only revocation and deletion are announced (nothing else of a grant changes).
CREATE TRIGGER oauth_grants_revoked
  AFTER UPDATE OF revoked_at ON oauth_grants
  FOR EACH ROW WHEN (OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL)
  EXECUTE FUNCTION notify_api_key_change();
CREATE TRIGGER oauth_grants_deleted_notify
  AFTER DELETE ON oauth_grants
  FOR EACH ROW EXECUTE FUNCTION notify_api_key_change();
-- A deleted grant leaves the same one-day tombstone as a deleted session.
CREATE TRIGGER oauth_grants_deleted
  AFTER DELETE ON oauth_grants
  FOR EACH ROW EXECUTE FUNCTION remember_ended_session();

CREATE TABLE oauth_codes (
  code_hash      bytea PRIMARY KEY,
  environment    text NOT NULL CHECK (environment IN ('live', 'test')),
  client_id      text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
  user_id        text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  redirect_uri   text NOT NULL,
  scopes         text[] NOT NULL,
  nonce          text,
  code_challenge text,
  auth_time      timestamptz NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  expires_at     timestamptz NOT NULL,
  used_at        timestamptz,
  -- The grant its redemption created: a second redemption ends it (RFC 6749 4.1.2).
  grant_id       text REFERENCES oauth_grants (id) ON DELETE SET NULL
);
CREATE INDEX oauth_codes_expires_at ON oauth_codes (expires_at);

CREATE TABLE oauth_refresh_tokens (
  token_hash  bytea PRIMARY KEY,
  grant_id    text NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  -- Set when it was exchanged (rotated): presenting it again ends the whole grant.
  used_at     timestamptz
);
CREATE INDEX oauth_refresh_tokens_grant ON oauth_refresh_tokens (grant_id);

-- Consent remembered per user and client: the scopes granted so far.
CREATE TABLE oauth_consents (
  user_id     text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  client_id   text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
  environment text NOT NULL CHECK (environment IN ('live', 'test')),
  scopes      text[] NOT NULL,
  granted_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, client_id)
);
