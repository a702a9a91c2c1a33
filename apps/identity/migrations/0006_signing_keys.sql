-- JWT signing keys (ES256). The private JWK is encrypted (AES-256-GCM) with a master key from config; the
-- public JWK is published at /.well-known/jwks.json while the key signs and for an overlap after.
CREATE TABLE signing_keys (
  kid             text PRIMARY KEY,
  alg             text NOT NULL,
  public_jwk      jsonb NOT NULL,
  private_jwk_enc bytea NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now()
);
