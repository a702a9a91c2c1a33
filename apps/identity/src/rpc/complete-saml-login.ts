import type { identity } from '@secsvc/proto';
import type { CallContext } from '@secsvc/shared';
import type { SamlLoginsService } from '../services/saml-logins';
import { toCreatedSession } from './messages';

export const completeSamlLogin =
  (saml: SamlLoginsService) =>
  async (req: identity.CompleteSamlLoginRequest, call: CallContext): Promise<identity.CompleteSamlLoginResponse> => {
    const { opened, userId, provisioned } = await saml.completeLogin(req, call);
    return { session: toCreatedSession(opened), userId, provisioned };
  };
