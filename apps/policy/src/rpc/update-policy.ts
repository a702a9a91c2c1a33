import type { policy } from '@secsvc/proto';
import { AppError, withTransaction, type CallContext } from '@secsvc/shared';
import { conditionsInput, environmentOf, toPolicyMessage, type PolicyContext } from '../context';
import { validateUpdate } from '../domain/policies';
import { appendPolicyEvent } from '../repositories/outbox';
import { policiesRepository } from '../repositories/policies';

/** Any subset of the fields; present lists and conditions replace the stored ones (README "Update"). */
export const updatePolicy =
  (ctx: PolicyContext) =>
  async (req: policy.UpdatePolicyRequest, call: CallContext): Promise<policy.Policy> => {
    const environment = environmentOf(req.environment);
    const changes = validateUpdate({
      name: req.name,
      description: req.description,
      effect: req.effect,
      principals: req.principals?.values,
      actions: req.actions?.values,
      resources: req.resources?.values,
      conditions: conditionsInput(req.conditions),
    });
    const row = await withTransaction(ctx.pool, async (client) => {
      const updated = await policiesRepository.update(client, environment, req.id, changes);
      if (!updated) throw AppError.notFound('Policy');
      await appendPolicyEvent(client, call, environment, 'policy.updated', updated.id, { fields: Object.keys(changes) });
      return updated;
    });
    await ctx.decisions.afterWrite(environment);
    return toPolicyMessage(row);
  };
