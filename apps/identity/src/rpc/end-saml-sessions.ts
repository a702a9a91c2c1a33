import type { identity } from '@secsvc/proto';
import type { CallContext } from '@secsvc/shared';
import type { SamlLoginsService } from '../services/saml-logins';

/** Single logout from the IdP: the sessions this NameID (and SessionIndex) got from this connection end. */
export const endSamlSessions =
  (saml: SamlLoginsService) =>
  async (req: identity.EndSamlSessionsRequest, call: CallContext): Promise<identity.EndSamlSessionsResponse> => ({
    revoked: await saml.endSessions(req, call),
  });
