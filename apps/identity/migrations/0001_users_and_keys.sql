-- Users, API keys and the transactional outbox of the identity service (schema `identity`).
-- Every row carries its environment: live and test data never mix.

CREATE TABLE users (
  id             text PRIMARY KEY,
  environment    text NOT NULL CHECK (environment IN ('live', 'test')),
  email          text NOT NULL,
  name           text NOT NULL,
  email_verified boolean NOT NULL DEFAULT false,
  roles          text[] NOT NULL DEFAULT '{}',
  -- json (not jsonb): the object is returned exactly as it was given, key order included.
  metadata       json NOT NULL DEFAULT '{}',
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now()
);

-- Emails are unique per environment, case-insensitively.
CREATE UNIQUE INDEX users_email_unique ON users (environment, lower(email));
-- Keyset pagination, newest first (ids are time-sortable).
CREATE INDEX users_environment_id ON users (environment, id DESC);

CREATE TABLE api_keys (
  id           text PRIMARY KEY,
  environment  text NOT NULL CHECK (environment IN ('live', 'test')),
  type         text NOT NULL CHECK (type IN ('secret', 'public', 'test')),
  name         text NOT NULL,
  plan         text NOT NULL DEFAULT 'free' CHECK (plan IN ('free', 'pro', 'enterprise')),
  -- HMAC-SHA-256 of the full key under SERVER_SECRET; the key itself is never stored.
  key_hash     bytea NOT NULL UNIQUE,
  prefix       text NOT NULL,
  last4        text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz,
  revoked_at   timestamptz
);

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
