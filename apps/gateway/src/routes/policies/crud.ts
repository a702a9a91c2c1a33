import { AppError, isId } from '@secsvc/shared';
import { z } from 'zod';
import { cursorParam, dataOf, defineRoute, errorSchema, limitParam, listOf, pageOf } from '../route';
import { createPolicyBody, policyForms, policyFull, policyListItem, toProtoConditions, updatePolicyBody } from './schemas';

// The policy CRUD routes live together: they share the forms and the id check.

const idParams = z.object({ id: z.string() });
const requireId = (id: string) => {
  if (!isId('pol', id)) throw AppError.notFound('Policy');
};

export const createPolicyRoute = defineRoute({
  method: 'post',
  path: '/policies',
  scope: 'write:policies',
  operationId: 'createPolicy',
  summary: 'Create a policy',
  tags: ['policies'],
  body: createPolicyBody,
  responses: {
    201: { description: 'Created', schema: dataOf(policyListItem) },
    400: { description: 'Invalid body; details name each entry, e.g. principals[2]', schema: errorSchema },
  },
  async handle({ body }, ctx) {
    const p = await ctx.clients.policy.createPolicy(
      {
        environment: ctx.principal.environment,
        name: body.name,
        description: body.description ?? '',
        effect: body.effect,
        principals: body.principals,
        actions: body.actions,
        resources: body.resources,
        conditions: toProtoConditions(body.conditions),
      },
      ctx.call,
    );
    return { status: 201, body: { data: policyForms.listItem(p) } };
  },
});

export const listPoliciesRoute = defineRoute({
  method: 'get',
  path: '/policies',
  scope: 'read:policies',
  operationId: 'listPolicies',
  summary: 'List policies, newest first',
  tags: ['policies'],
  query: z.strictObject({ limit: limitParam, cursor: cursorParam }),
  responses: { 200: { description: 'A page of policies', schema: listOf(policyListItem) } },
  async handle({ query }, ctx) {
    const page = await ctx.clients.policy.listPolicies({ environment: ctx.principal.environment, limit: query.limit, cursor: query.cursor ?? '' }, ctx.call);
    return pageOf(page.policies.map(policyForms.listItem), page.hasMore, page.nextCursor);
  },
});

export const getPolicyRoute = defineRoute({
  method: 'get',
  path: '/policies/:id',
  scope: 'read:policies',
  operationId: 'getPolicy',
  summary: 'Get a policy (full form)',
  tags: ['policies'],
  params: idParams,
  responses: { 200: { description: 'The policy', schema: dataOf(policyFull) }, 404: { description: 'No such policy', schema: errorSchema } },
  async handle({ params }, ctx) {
    requireId(params.id);
    const p = await ctx.clients.policy.getPolicy({ environment: ctx.principal.environment, id: params.id }, ctx.call);
    return { status: 200, body: { data: policyForms.full(p) } };
  },
});

export const updatePolicyRoute = defineRoute({
  method: 'patch',
  path: '/policies/:id',
  scope: 'write:policies',
  operationId: 'updatePolicy',
  summary: 'Update any subset of a policy; arrays and conditions replace the stored value',
  tags: ['policies'],
  params: idParams,
  body: updatePolicyBody,
  responses: {
    200: { description: 'id, the updated fields and updatedAt', schema: dataOf(policyFull.partial().required({ id: true, updatedAt: true })) },
    400: { description: 'Invalid body', schema: errorSchema },
    404: { description: 'No such policy', schema: errorSchema },
  },
  async handle({ params, body }, ctx) {
    // the body names at least one field (a refinement of updatePolicyBody)
    const fields = Object.keys(body) as (keyof typeof body)[];
    requireId(params.id);
    const list = (v: string[] | undefined) => (v === undefined ? undefined : { values: v });
    const p = await ctx.clients.policy.updatePolicy(
      {
        environment: ctx.principal.environment,
        id: params.id,
        name: body.name,
        description: body.description,
        effect: body.effect,
        principals: list(body.principals),
        actions: list(body.actions),
        resources: list(body.resources),
        conditions: toProtoConditions(body.conditions),
      },
      ctx.call,
    );
    const full = policyForms.full(p);
    const data: Record<string, unknown> = { id: full.id };
    for (const f of fields) data[f] = full[f];
    data.updatedAt = full.updatedAt;
    return { status: 200, body: { data } };
  },
});

export const deletePolicyRoute = defineRoute({
  method: 'delete',
  path: '/policies/:id',
  scope: 'write:policies',
  operationId: 'deletePolicy',
  summary: 'Delete a policy',
  tags: ['policies'],
  params: idParams,
  responses: { 204: { description: 'Deleted' }, 404: { description: 'No such policy', schema: errorSchema } },
  async handle({ params }, ctx) {
    requireId(params.id);
    await ctx.clients.policy.deletePolicy({ environment: ctx.principal.environment, id: params.id }, ctx.call);
    return { status: 204 };
  },
});
