import { confirmTotpRoute } from './confirm-totp';
import { enrollTotpRoute } from './enroll-totp';
import { deleteFactorRoute, renameFactorRoute } from './factors';
import { listFactorsRoute } from './list-factors';
import { passkeyRegistrationOptionsRoute, registerPasskeyRoute } from './passkeys';
import { regenerateRecoveryCodesRoute } from './recovery-codes';
import { getMfaSettingsRoute, updateMfaSettingsRoute } from './settings';

export const mfaRoutes = [
  listFactorsRoute,
  enrollTotpRoute,
  confirmTotpRoute,
  passkeyRegistrationOptionsRoute,
  registerPasskeyRoute,
  regenerateRecoveryCodesRoute,
  renameFactorRoute,
  deleteFactorRoute,
  getMfaSettingsRoute,
  updateMfaSettingsRoute,
];
