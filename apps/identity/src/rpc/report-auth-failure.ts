import type { identity } from '@secsvc/proto';
import type { CallContext } from '@secsvc/shared';
import type { AuthEventsService } from '../services/auth-events';

/** auth.failed for a JWT the gateway refused (the reason is a short code from a fixed set; nothing else). */
export const reportAuthFailure =
  (authEvents: AuthEventsService) =>
  async (req: identity.ReportAuthFailureRequest, call: CallContext): Promise<identity.ReportAuthFailureResponse> => {
    await authEvents.jwtRefused(req.reason, call);
    return {};
  };
