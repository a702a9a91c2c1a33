import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { MfaService } from '../services/mfa';
import { toMfaSettingsMessage } from './messages';

export const updateMfaSettings =
  (mfa: MfaService) =>
  async (req: identity.UpdateMfaSettingsRequest, call: CallContext): Promise<identity.MfaSettings> =>
    toMfaSettingsMessage(await mfa.updateSettings(environmentOf(req.environment), req.required, req.roles, call));
