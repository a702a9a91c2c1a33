import { z } from 'zod';
import { dataOf, defineRoute, errorSchema } from '../route';
import { resetConfirmBody, resetRequestBody } from './schemas';

export const requestPasswordResetRoute = defineRoute({
  method: 'post',
  path: '/auth/password-reset',
  operationId: 'requestPasswordReset',
  summary: 'Ask for a password reset token by email (always 202: no account enumeration)',
  tags: ['auth'],
  keyTypes: ['secret', 'test', 'public'],
  anonymous: true,
  body: resetRequestBody,
  responses: { 202: { description: 'Accepted', schema: dataOf(z.object({ status: z.literal('accepted') })) } },
  async handle({ body }, ctx) {
    await ctx.clients.identity.requestPasswordReset({ environment: ctx.principal.environment, email: body.email }, ctx.call);
    return { status: 202, body: { data: { status: 'accepted' } } };
  },
});

export const confirmPasswordResetRoute = defineRoute({
  method: 'post',
  path: '/auth/password-reset/confirm',
  operationId: 'confirmPasswordReset',
  summary: "Set a new password with a reset token (single use, 1 hour); ends all the user's sessions",
  tags: ['auth'],
  keyTypes: ['secret', 'test', 'public'],
  anonymous: true,
  body: resetConfirmBody,
  responses: {
    204: { description: 'Password changed' },
    400: { description: 'Invalid, used or expired token (field token), or a password breaking the rules', schema: errorSchema },
  },
  async handle({ body }, ctx) {
    await ctx.clients.identity.confirmPasswordReset(
      { environment: ctx.principal.environment, token: body.token, password: body.password },
      ctx.call,
    );
    return { status: 204 };
  },
});
