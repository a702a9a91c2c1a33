import type { identity } from '@secsvc/proto';
import type { SamlLoginsService } from '../services/saml-logins';

export const saveSamlRequest =
  (saml: SamlLoginsService) =>
  async (req: identity.SaveSamlRequestRequest): Promise<identity.SaveSamlRequestResponse> => {
    await saml.saveRequest(req);
    return {};
  };
