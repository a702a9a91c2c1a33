-- SP-initiated single logout names the subject as the IdP did: the NameID's Format is kept with it.
ALTER TABLE saml_sessions ADD COLUMN name_id_format text NOT NULL DEFAULT '';
