import type { policy } from '@secsvc/proto';
import { AppError, withTransaction, type CallContext } from '@secsvc/shared';
import { environmentOf, type PolicyContext } from '../context';
import { appendPolicyEvent } from '../repositories/outbox';
import { policiesRepository } from '../repositories/policies';

export const deletePolicy =
  (ctx: PolicyContext) =>
  async (req: policy.DeletePolicyRequest, call: CallContext): Promise<policy.DeletePolicyResponse> => {
    const environment = environmentOf(req.environment);
    await withTransaction(ctx.pool, async (client) => {
      if (!(await policiesRepository.delete(client, environment, req.id))) throw AppError.notFound('Policy');
      await appendPolicyEvent(client, call, environment, 'policy.deleted', req.id);
    });
    await ctx.decisions.afterWrite(environment);
    return {};
  };
