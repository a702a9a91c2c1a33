import type { policy } from '@secsvc/proto';
import { AppError, decodeCursor, encodeCursor } from '@secsvc/shared';
import { environmentOf, toPolicyMessage, type PolicyContext } from '../context';
import { policiesRepository } from '../repositories/policies';

export const MAX_PAGE = 100;

/** Newest first; `cursor` continues after the last policy of the previous page (same environment only). */
export const listPolicies =
  (ctx: PolicyContext) =>
  async (req: policy.ListPoliciesRequest): Promise<policy.ListPoliciesResponse> => {
    const environment = environmentOf(req.environment);
    if (!Number.isInteger(req.limit) || req.limit < 1 || req.limit > MAX_PAGE) {
      throw AppError.field('limit', `must be an integer from 1 to ${MAX_PAGE}`);
    }
    const after = req.cursor ? decodeCursor(req.cursor, { kind: 'policies', environment }, ctx.config.SERVER_SECRET) : undefined;
    const rows = await policiesRepository.list(ctx.pool, environment, req.limit, after);
    const page = rows.slice(0, req.limit);
    const hasMore = rows.length > req.limit;
    return {
      policies: page.map(toPolicyMessage),
      hasMore,
      nextCursor: hasMore
        ? encodeCursor({ kind: 'policies', environment, after: page[page.length - 1]!.id }, ctx.config.SERVER_SECRET)
        : '',
    };
  };
