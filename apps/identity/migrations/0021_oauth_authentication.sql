-- How the user of an authorization authenticated, for the amr, acr and auth_time claims of its ID and access
-- tokens (OpenID Connect Core 2, RFC 8176, RFC 9068): copied from the login session when the code is issued and
-- kept by the grant, so refreshed tokens tell the authentication the grant came from (a refresh is not one).
-- session_id names that session (no foreign key: a grant outlives its session, which retention deletes).

ALTER TABLE oauth_codes
  ADD COLUMN session_id text,
  ADD COLUMN amr        text[] NOT NULL DEFAULT '{}',
  ADD COLUMN acr        text NOT NULL DEFAULT '';

ALTER TABLE oauth_grants
  ADD COLUMN session_id text,
  ADD COLUMN amr        text[] NOT NULL DEFAULT '{}',
  ADD COLUMN acr        text NOT NULL DEFAULT '';
