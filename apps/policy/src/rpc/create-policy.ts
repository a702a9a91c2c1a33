import type { policy } from '@secsvc/proto';
import { AppError, newId, withTransaction, type CallContext } from '@secsvc/shared';
import { conditionsInput, environmentOf, toPolicyMessage, type PolicyContext } from '../context';
import { policyLimits, validateCreate } from '../domain/policies';
import { appendPolicyEvent } from '../repositories/outbox';
import { policiesRepository } from '../repositories/policies';

export const createPolicy =
  (ctx: PolicyContext) =>
  async (req: policy.CreatePolicyRequest, call: CallContext): Promise<policy.Policy> => {
    const environment = environmentOf(req.environment);
    const input = validateCreate({ ...req, conditions: conditionsInput(req.conditions) });
    const row = await withTransaction(ctx.pool, async (client) => {
      if ((await policiesRepository.lockAndCount(client, environment)) >= policyLimits.maxPoliciesPerEnvironment) {
        throw new AppError(
          'conflict',
          `This environment already holds the maximum of ${policyLimits.maxPoliciesPerEnvironment} policies; delete one first`,
        );
      }
      const created = await policiesRepository.insert(client, { id: newId('pol'), environment, ...input });
      await appendPolicyEvent(client, call, environment, 'policy.created', created.id, { name: created.name, effect: created.effect });
      return created;
    });
    await ctx.decisions.afterWrite(environment);
    return toPolicyMessage(row);
  };
