import type { identity } from '@secsvc/proto';
import { AppError, isId, type CallContext } from '@secsvc/shared';
import { environmentOf, type IdentityContext } from '../context';
import { recordRateLimitExceeded } from '../repositories/outbox';

const SUBJECTS = { api_key: 'key', user: 'user', ip: undefined } as const;

/** rate_limit.exceeded for a caller a gateway refused (the gateway reports once per subject and window). */
export const reportRateLimitExceeded =
  (ctx: IdentityContext) =>
  async (req: identity.ReportRateLimitExceededRequest, call: CallContext): Promise<identity.ReportRateLimitExceededResponse> => {
    const environment = environmentOf(req.environment);
    const errors: { field: string; message: string }[] = [];
    if (!Object.hasOwn(SUBJECTS, req.subjectType)) errors.push({ field: 'subjectType', message: 'must be api_key, user or ip' });
    const idPrefix = SUBJECTS[req.subjectType as keyof typeof SUBJECTS];
    if (idPrefix ? !isId(idPrefix, req.subjectId) : req.subjectId !== '') {
      errors.push({ field: 'subjectId', message: idPrefix ? `must be a ${idPrefix}_ id` : 'must be empty for an ip' });
    }
    if (!Number.isInteger(req.limit) || req.limit < 1) errors.push({ field: 'limit', message: 'must be a positive integer' });
    if (!Number.isInteger(req.windowSeconds) || req.windowSeconds < 1) errors.push({ field: 'windowSeconds', message: 'must be a positive integer' });
    if (errors.length) throw AppError.invalid(errors);
    await recordRateLimitExceeded(
      ctx.pool,
      call,
      environment,
      { type: req.subjectType as 'api_key' | 'user' | 'ip', id: req.subjectId },
      req.limit,
      req.windowSeconds,
    );
    return {};
  };
