-- Sessions that were deleted (with their user) leave a tombstone for a day, so a gateway that connects
-- later still learns that their access tokens must be refused (see WatchCredentialChanges).
CREATE TABLE ended_sessions (
  id        text PRIMARY KEY,
  ended_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ended_sessions_ended_at ON ended_sessions (ended_at);

CREATE FUNCTION remember_ended_session() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ended_sessions (id) VALUES (OLD.id) ON CONFLICT (id) DO NOTHING;
  DELETE FROM ended_sessions WHERE ended_at < now() - interval '1 day';
  RETURN NULL;
END;
$$;

CREATE TRIGGER sessions_deleted
  AFTER DELETE ON sessions
  FOR EACH ROW EXECUTE FUNCTION remember_ended_session();
