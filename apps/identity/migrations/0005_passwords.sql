-- Passwords (scrypt, parameters stored with each hash), login throttling and password reset tokens.
ALTER TABLE users ADD COLUMN password_hash text;

-- Failed logins, counted per account and per client ip over a sliding 15-minute window.
CREATE TABLE login_failures (
  id           bigserial PRIMARY KEY,
  environment  text NOT NULL CHECK (environment IN ('live', 'test')),
  email        text NOT NULL,
  ip           text NOT NULL,
  failed_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX login_failures_email ON login_failures (environment, lower(email), failed_at);
CREATE INDEX login_failures_ip ON login_failures (ip, failed_at);

CREATE TABLE password_reset_tokens (
  id           text PRIMARY KEY,
  environment  text NOT NULL CHECK (environment IN ('live', 'test')),
  user_id      text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  token_hash   bytea NOT NULL UNIQUE,
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  used_at      timestamptz
);
