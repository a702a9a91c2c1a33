-- SHA-1 signatures (RSA-SHA1, SHA-1 digests) are refused on every SAML message unless the connection opts in
-- (legacy IdPs only).
ALTER TABLE sso_connections ADD COLUMN allow_sha1_signatures boolean NOT NULL DEFAULT false;
