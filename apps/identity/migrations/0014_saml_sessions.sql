-- SAML single logout: which sessions a SAML login opened, under which NameID and SessionIndex, so a
-- LogoutRequest from the IdP can end exactly those. Rows go with their session or connection.
CREATE TABLE saml_sessions (
  session_id     text PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
  connection_id  text NOT NULL REFERENCES sso_connections (id) ON DELETE CASCADE,
  name_id        text NOT NULL,
  session_index  text NOT NULL DEFAULT ''
);
CREATE INDEX saml_sessions_subject ON saml_sessions (connection_id, name_id);
