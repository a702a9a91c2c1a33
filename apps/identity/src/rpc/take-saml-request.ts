import type { identity } from '@secsvc/proto';
import type { SamlLoginsService } from '../services/saml-logins';

export const takeSamlRequest =
  (saml: SamlLoginsService) =>
  async (req: identity.TakeSamlRequestRequest): Promise<identity.TakeSamlRequestResponse> => {
    const taken = await saml.takeRequest(req.requestId);
    return { found: taken !== undefined, connectionId: taken?.connectionId ?? '', returnTo: taken?.returnTo ?? '', binding: taken?.binding ?? '' };
  };
