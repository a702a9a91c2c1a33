import { defineRoute, errorSchema } from '../route';
import { z } from 'zod';
import { checkIds, factorForm, factorOf, userFactorsParams } from './schemas';

export const listFactorsRoute = defineRoute({
  method: 'get',
  path: '/users/:id/mfa/factors',
  scope: 'read:users',
  operationId: 'listMfaFactors',
  summary: "A user's MFA factors (TOTP, passkeys, recovery codes), and whether the environment requires MFA of them",
  tags: ['mfa'],
  params: userFactorsParams,
  responses: {
    200: { description: 'The factors, oldest first', schema: z.object({ data: z.array(factorForm), meta: z.object({ mfaRequired: z.boolean() }) }) },
    404: { description: 'No such user', schema: errorSchema },
  },
  async handle({ params }, ctx) {
    checkIds(params.id);
    const r = await ctx.clients.identity.listMfaFactors({ environment: ctx.principal.environment, userId: params.id }, ctx.call);
    return { status: 200, body: { data: r.factors.map(factorOf), meta: { mfaRequired: r.mfaRequired } } };
  },
});
