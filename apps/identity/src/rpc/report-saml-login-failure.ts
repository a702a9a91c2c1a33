import type { identity } from '@secsvc/proto';
import type { CallContext } from '@secsvc/shared';
import type { SamlLoginsService } from '../services/saml-logins';

export const reportSamlLoginFailure =
  (saml: SamlLoginsService) =>
  async (req: identity.ReportSamlLoginFailureRequest, call: CallContext): Promise<identity.ReportSamlLoginFailureResponse> => {
    await saml.reportFailure(req, call);
    return {};
  };
