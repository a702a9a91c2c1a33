import { dataOf, defineRoute, errorSchema } from '../route';
import { checkIds, factorForm, factorOf, factorParams, renameFactorBody } from './schemas';

export const renameFactorRoute = defineRoute({
  method: 'patch',
  path: '/users/:id/mfa/factors/:factorId',
  operationId: 'renameMfaFactor',
  summary: 'Rename a factor',
  tags: ['mfa'],
  params: factorParams,
  body: renameFactorBody,
  responses: {
    200: { description: 'The factor', schema: dataOf(factorForm) },
    404: { description: 'No such user or factor', schema: errorSchema },
  },
  async handle({ params, body }, ctx) {
    checkIds(params.id, params.factorId);
    const f = await ctx.clients.identity.updateMfaFactor({ environment: ctx.principal.environment, userId: params.id, factorId: params.factorId, name: body.name }, ctx.call);
    return { status: 200, body: { data: factorOf(f) } };
  },
});

export const deleteFactorRoute = defineRoute({
  method: 'delete',
  path: '/users/:id/mfa/factors/:factorId',
  operationId: 'deleteMfaFactor',
  summary: 'Remove a factor (user.mfa.factor_removed); the last one of a user the environment requires MFA of is refused',
  tags: ['mfa'],
  params: factorParams,
  responses: {
    204: { description: 'Removed' },
    404: { description: 'No such user or factor', schema: errorSchema },
    409: { description: 'The last TOTP or passkey of a user who must use MFA', schema: errorSchema },
  },
  async handle({ params }, ctx) {
    checkIds(params.id, params.factorId);
    await ctx.clients.identity.deleteMfaFactor({ environment: ctx.principal.environment, userId: params.id, factorId: params.factorId }, ctx.call);
    return { status: 204 };
  },
});
