-- IdP-initiated logins can continue into the app: the app's login initiation URL (OpenID Connect
-- initiate_login_uri) per connection; empty = answer JSON as before.
ALTER TABLE sso_connections ADD COLUMN initiate_login_url text NOT NULL DEFAULT '';
