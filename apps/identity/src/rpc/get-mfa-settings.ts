import type { identity } from '@secsvc/proto';
import { environmentOf } from '@secsvc/shared';
import type { MfaService } from '../services/mfa';
import { toMfaSettingsMessage } from './messages';

export const getMfaSettings =
  (mfa: MfaService) =>
  async (req: identity.GetMfaSettingsRequest): Promise<identity.MfaSettings> =>
    toMfaSettingsMessage(await mfa.getSettings(environmentOf(req.environment)));
