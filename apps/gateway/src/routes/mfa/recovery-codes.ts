import { z } from 'zod';
import { dataOf, defineRoute, errorSchema } from '../route';
import { checkIds, factorForm, factorOf, userFactorsParams } from './schemas';

export const regenerateRecoveryCodesRoute = defineRoute({
  method: 'post',
  path: '/users/:id/mfa/recovery-codes',
  operationId: 'regenerateRecoveryCodes',
  summary: 'A new set of 10 recovery codes (shown once, each works once); any earlier set stops working',
  tags: ['mfa'],
  params: userFactorsParams,
  responses: {
    201: { description: 'The codes', schema: dataOf(z.object({ factor: factorForm, codes: z.array(z.string()).describe('shown only in this response') })) },
    404: { description: 'No such user', schema: errorSchema },
  },
  async handle({ params }, ctx) {
    checkIds(params.id);
    const r = await ctx.clients.identity.regenerateRecoveryCodes({ environment: ctx.principal.environment, userId: params.id }, ctx.call);
    return { status: 201, body: { data: { factor: factorOf(r.factor!), codes: r.codes } } };
  },
});
