import { dataOf, defineRoute, errorSchema } from '../route';
import { checkIds, confirmTotpBody, factorForm, factorOf, factorParams } from './schemas';

export const confirmTotpRoute = defineRoute({
  method: 'post',
  path: '/users/:id/mfa/totp/:factorId/confirm',
  operationId: 'confirmTotp',
  summary: "Confirm a pending TOTP factor with the authenticator's current code (user.mfa.factor_added)",
  tags: ['mfa'],
  params: factorParams,
  body: confirmTotpBody,
  responses: {
    200: { description: 'The factor, confirmed', schema: dataOf(factorForm) },
    401: { description: 'The code is not the current one (user.mfa.failed; throttled like passwords)', schema: errorSchema },
    404: { description: 'No such user or factor', schema: errorSchema },
    409: { description: 'The factor is confirmed already', schema: errorSchema },
    429: { description: 'Too many failed codes for the user (5) or the ip (20) in 15 minutes; Retry-After', schema: errorSchema },
  },
  async handle({ params, body }, ctx) {
    checkIds(params.id, params.factorId);
    const f = await ctx.clients.identity.confirmTotp(
      { environment: ctx.principal.environment, userId: params.id, factorId: params.factorId, code: body.code, ip: ctx.call.headers['x-client-ip'] ?? '' },
      ctx.call,
    );
    return { status: 200, body: { data: factorOf(f) } };
  },
});
