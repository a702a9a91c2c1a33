-- An SP-initiated SAML login started on the OAuth login page continues there after the ACS: the
-- authorization request's query is kept with the AuthnRequest id.
ALTER TABLE saml_requests ADD COLUMN return_to text NOT NULL DEFAULT '';
