import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { AuthEventsService } from '../services/auth-events';

/** rate_limit.exceeded for a caller a gateway refused (the gateway reports once per subject and window). */
export const reportRateLimitExceeded =
  (authEvents: AuthEventsService) =>
  async (req: identity.ReportRateLimitExceededRequest, call: CallContext): Promise<identity.ReportRateLimitExceededResponse> => {
    await authEvents.rateLimitExceeded(environmentOf(req.environment), req, call);
    return {};
  };
