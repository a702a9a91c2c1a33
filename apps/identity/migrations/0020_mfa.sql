-- Multi-factor authentication: each user's factors (TOTP, passkeys, a set of recovery codes), the short-lived
-- challenges of a login's second step and of WebAuthn ceremonies, the environment's MFA requirement, and what
-- a session knows of how it was authenticated (RFC 8176 amr values, acr, the time of its latest MFA).

ALTER TABLE sessions
  ADD COLUMN amr    text[] NOT NULL DEFAULT '{}',
  ADD COLUMN acr    text NOT NULL DEFAULT '',
  ADD COLUMN mfa_at timestamptz;

CREATE TABLE mfa_factors (
  id            text PRIMARY KEY,
  environment   text NOT NULL CHECK (environment IN ('live', 'test')),
  user_id       text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  kind          text NOT NULL CHECK (kind IN ('totp', 'passkey', 'recovery_codes')),
  name          text NOT NULL,
  -- TOTP: pending until a first code is given; other kinds are confirmed when created.
  confirmed_at  timestamptz,
  -- TOTP: the shared secret sealed with AES-256-GCM (key derived from SERVER_SECRET, bound to the factor id).
  secret        bytea,
  -- TOTP: the last accepted time step; a code of this step or an earlier one is refused (no replay).
  last_step     bigint,
  -- Passkeys: the WebAuthn credential.
  credential_id text UNIQUE,
  public_key    bytea,
  sign_count    bigint,
  transports    text[],
  aaguid        text,
  backed_up     boolean,
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_used_at  timestamptz
);

CREATE INDEX mfa_factors_user ON mfa_factors (user_id, id);
-- One set of recovery codes per user (regenerating replaces it).
CREATE UNIQUE INDEX mfa_factors_one_recovery_set ON mfa_factors (user_id) WHERE kind = 'recovery_codes';

-- Recovery codes are stored only as HMACs; each works once.
CREATE TABLE mfa_recovery_codes (
  factor_id text NOT NULL REFERENCES mfa_factors (id) ON DELETE CASCADE,
  code_hash bytea NOT NULL,
  used_at   timestamptz,
  PRIMARY KEY (factor_id, code_hash)
);

-- Challenges: a login waiting for its second factor (token shown once, stored as an HMAC), a WebAuthn
-- registration or authentication (its random challenge). Each is used once and lives a few minutes.
CREATE TABLE mfa_challenges (
  id           text PRIMARY KEY,
  environment  text NOT NULL CHECK (environment IN ('live', 'test')),
  purpose      text NOT NULL CHECK (purpose IN ('login', 'passkey_registration', 'passkey_authentication')),
  -- Absent for a passwordless passkey login (the credential names its user).
  user_id      text REFERENCES users (id) ON DELETE CASCADE,
  token_hash   bytea UNIQUE,
  webauthn_challenge text,
  -- What the login had established: ip, user agent, session lifetime, OAuth client, amr so far.
  data         jsonb NOT NULL DEFAULT '{}',
  attempts     int NOT NULL DEFAULT 0,
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  used_at      timestamptz
);

CREATE INDEX mfa_challenges_expiry ON mfa_challenges (expires_at);

-- Failed second-factor proofs, counted per user (NULL: no user could be named, counted per ip only) and per ip
-- over the login window (15 minutes), apart from password failures so no login form can write into them.
CREATE TABLE mfa_failures (
  id          bigserial PRIMARY KEY,
  environment text NOT NULL CHECK (environment IN ('live', 'test')),
  user_id     text REFERENCES users (id) ON DELETE CASCADE,
  ip          text NOT NULL,
  failed_at   timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX mfa_failures_user ON mfa_failures (user_id, failed_at);
CREATE INDEX mfa_failures_ip ON mfa_failures (ip, failed_at);

-- Who must use MFA, per environment: nobody (off), every user (all), or users holding one of `roles`.
CREATE TABLE mfa_settings (
  environment text PRIMARY KEY CHECK (environment IN ('live', 'test')),
  required    text NOT NULL DEFAULT 'off' CHECK (required IN ('off', 'all', 'roles')),
  roles       text[] NOT NULL DEFAULT '{}',
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- A step-up (amr, acr, mfa_at) is not a revocation: access tokens of the session stay valid. The credential
-- change announces it as `auth:<session id>`, which makes gateways drop their cached authentication of the
-- session (so its new MFA counts at once) without refusing its tokens.
CREATE OR REPLACE FUNCTION notify_api_key_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' OR (to_jsonb(OLD) - 'last_used_at' - 'amr' - 'acr' - 'mfa_at') IS DISTINCT FROM (to_jsonb(NEW) - 'last_used_at' - 'amr' - 'acr' - 'mfa_at') THEN
    PERFORM pg_notify('secsvc_credential_changes', OLD.id);
  ELSIF (to_jsonb(OLD) ->> 'mfa_at') IS DISTINCT FROM (to_jsonb(NEW) ->> 'mfa_at') OR (to_jsonb(OLD) -> 'amr') IS DISTINCT FROM (to_jsonb(NEW) -> 'amr') THEN
    PERFORM pg_notify('secsvc_credential_changes', 'auth:' || OLD.id);
  END IF;
  RETURN NULL;
END;
$$;

-- A SAML connection may require MFA: a login whose assertion does not say the IdP did MFA then needs the
-- user's own second factor here.
ALTER TABLE sso_connections ADD COLUMN require_mfa boolean NOT NULL DEFAULT false;
