import type { policy } from '@secsvc/proto';
import { AppError } from '@secsvc/shared';
import { environmentOf, toPolicyMessage, type PolicyContext } from '../context';
import { policiesRepository } from '../repositories/policies';

export const getPolicy =
  (ctx: PolicyContext) =>
  async (req: policy.GetPolicyRequest): Promise<policy.Policy> => {
    const row = await policiesRepository.get(ctx.pool, environmentOf(req.environment), req.id);
    if (!row) throw AppError.notFound('Policy');
    return toPolicyMessage(row);
  };
