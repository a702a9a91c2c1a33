-- SAML 2.0 single sign-on: connections to enterprise identity providers, the AuthnRequest ids sent to them
-- (InResponseTo of SP-initiated logins) and the assertion ids already used (replay protection). Ids are
-- kept until they expire; expired rows are removed as new ones arrive.

CREATE TABLE sso_connections (
  id                     text PRIMARY KEY,
  environment            text NOT NULL CHECK (environment IN ('live', 'test')),
  name                   text NOT NULL,
  idp_metadata_xml       text NOT NULL,
  idp_entity_id          text NOT NULL,
  idp_sso_url            text NOT NULL,
  idp_certificates       text[] NOT NULL,
  domains                text[] NOT NULL DEFAULT '{}',
  default_roles          text[] NOT NULL DEFAULT '{}',
  attribute_mapping      jsonb NOT NULL DEFAULT '{}',
  allow_idp_initiated    boolean NOT NULL DEFAULT false,
  created_at             timestamptz NOT NULL DEFAULT now(),
  updated_at             timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sso_connections_environment_id ON sso_connections (environment, id DESC);
CREATE INDEX sso_connections_domains ON sso_connections USING gin (domains);

CREATE TABLE saml_requests (
  id            text PRIMARY KEY,
  connection_id text NOT NULL REFERENCES sso_connections (id) ON DELETE CASCADE,
  expires_at    timestamptz NOT NULL
);
CREATE INDEX saml_requests_expires ON saml_requests (expires_at);

CREATE TABLE saml_assertions (
  connection_id text NOT NULL REFERENCES sso_connections (id) ON DELETE CASCADE,
  assertion_id  text NOT NULL,
  expires_at    timestamptz NOT NULL,
  PRIMARY KEY (connection_id, assertion_id)
);
CREATE INDEX saml_assertions_expires ON saml_assertions (expires_at);
