-- Gateways cache session verifications, which include the user: announce user changes (profile, roles,
-- deletion) on the credential channel too, so those cached answers are dropped at once.
CREATE TRIGGER users_changed
  AFTER UPDATE OR DELETE ON users
  FOR EACH ROW EXECUTE FUNCTION notify_api_key_change();
