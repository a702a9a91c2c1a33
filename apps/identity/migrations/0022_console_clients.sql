-- The admin console's first-party OAuth clients (public, PKCE): one per environment, created by identity at
-- start-up (under an advisory lock, like the bootstrap key) and repaired when one was deleted or changed. This
-- table says which client is the console's; deleting the client deletes its row here.
CREATE TABLE console_clients (
  environment text PRIMARY KEY CHECK (environment IN ('live', 'test')),
  client_id   text NOT NULL UNIQUE REFERENCES oauth_clients (id) ON DELETE CASCADE
);
