import type { policy } from '@secsvc/proto';
import { keysetPage, pageRequest } from '@secsvc/shared';
import { environmentOf, toPolicyMessage, type PolicyContext } from '../context';
import { policiesRepository } from '../repositories/policies';

export const MAX_PAGE = 100;

/** Newest first; `cursor` continues after the last policy of the previous page (same environment only). */
export const listPolicies =
  (ctx: PolicyContext) =>
  async (req: policy.ListPoliciesRequest): Promise<policy.ListPoliciesResponse> => {
    const environment = environmentOf(req.environment);
    const scope = { kind: 'policies', environment };
    const { limit, after } = pageRequest(req, scope, ctx.config.SERVER_SECRET, MAX_PAGE);
    const rows = await policiesRepository.list(ctx.pool, environment, limit, after);
    const { page, hasMore, nextCursor } = keysetPage(rows, limit, scope, ctx.config.SERVER_SECRET);
    return { policies: page.map(toPolicyMessage), hasMore, nextCursor };
  };
