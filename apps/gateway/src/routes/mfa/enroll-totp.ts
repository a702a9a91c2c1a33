import { dataOf, defineRoute, errorSchema } from '../route';
import { checkIds, enrollTotpBody, totpEnrollmentForm, totpEnrollmentOf, userFactorsParams } from './schemas';

export const enrollTotpRoute = defineRoute({
  method: 'post',
  path: '/users/:id/mfa/totp',
  operationId: 'enrollTotp',
  summary: 'Start a TOTP enrollment: the secret, its otpauth:// URI and a QR code (shown once); confirm with a first code',
  tags: ['mfa'],
  params: userFactorsParams,
  body: enrollTotpBody,
  responses: {
    201: {
      description: 'A pending TOTP factor and its secret',
      schema: dataOf(totpEnrollmentForm),
    },
    404: { description: 'No such user', schema: errorSchema },
    409: { description: 'The user has the most factors allowed (20)', schema: errorSchema },
  },
  async handle({ params, body }, ctx) {
    checkIds(params.id);
    const e = await ctx.clients.identity.enrollTotp({ environment: ctx.principal.environment, userId: params.id, name: body.name ?? '' }, ctx.call);
    return { status: 201, body: { data: totpEnrollmentOf(e) } };
  },
});
