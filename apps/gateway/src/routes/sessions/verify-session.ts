import { z } from 'zod';
import type { VerifyAnswer } from '../../auth/verify-cache';
import { userForms, userFull } from '../users/schemas';
import { dataOf, defineRoute, errorSchema } from '../route';
import { sessionForm, tokenBody } from './schemas';

export const verifySessionRoute = defineRoute({
  method: 'post',
  path: '/sessions/verify',
  scope: 'read:users',
  operationId: 'verifySession',
  summary: 'Verify a session token (valid: false for unknown, malformed, expired or revoked tokens)',
  tags: ['sessions'],
  keyTypes: ['secret', 'test', 'public'],
  body: tokenBody,
  responses: {
    200: {
      description: 'The verdict',
      schema: dataOf(
        z.object({
          valid: z.boolean(),
          user: userFull.optional(),
          session: sessionForm.pick({ id: true, expiresAt: true, amr: true, acr: true, mfaAt: true }).optional(),
        }),
      ),
    },
    400: { description: 'No token string in the body', schema: errorSchema },
  },
  async handle({ body }, ctx) {
    const verify = async (): Promise<VerifyAnswer> => {
      const res = await ctx.clients.identity.verifySession({ environment: ctx.principal.environment, token: body.token }, ctx.call);
      if (!res.valid || !res.user || !res.session) return { body: { data: { valid: false } } };
      return {
        body: { data: { valid: true, user: userForms.full(res.user), session: { id: res.session.id, expiresAt: res.session.expiresAt, amr: res.session.amr, acr: res.session.acr, mfaAt: res.session.mfaAt ?? null } } },
        session: { sessionId: res.session.id, userId: res.user.id, expiresAt: Date.parse(res.session.expiresAt!) },
      };
    };
    const answer = ctx.verifyCache ? await ctx.verifyCache.get(`${ctx.principal.environment}:${body.token}`, verify) : (await verify()).body;
    return { status: 200, body: answer };
  },
});
