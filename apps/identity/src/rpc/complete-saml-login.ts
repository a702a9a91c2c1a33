import type { identity } from '@secsvc/proto';
import type { CallContext } from '@secsvc/shared';
import type { SamlLoginsService } from '../services/saml-logins';
import { toCreatedSession, toMfaChallenge } from './messages';

export const completeSamlLogin =
  (saml: SamlLoginsService) =>
  async (req: identity.CompleteSamlLoginRequest, call: CallContext): Promise<identity.CompleteSamlLoginResponse> => {
    const { opened, challenge, userId, provisioned } = await saml.completeLogin(req, call);
    return { session: opened && toCreatedSession(opened), mfa: challenge && toMfaChallenge(challenge), userId, provisioned };
  };
