-- The browser that started an SP-initiated login: SHA-256 (base64url) of the nonce in its cookie. The gateway
-- finishes the login only in a browser holding that nonce (no login CSRF); empty for requests made before.
ALTER TABLE saml_requests ADD COLUMN binding text NOT NULL DEFAULT '';
