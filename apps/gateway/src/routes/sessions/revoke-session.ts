import { createHash, timingSafeEqual } from 'node:crypto';
import { defineRoute, errorSchema } from '../route';
import { tokenBody } from './schemas';

const digest = (s: string) => createHash('sha256').update(s).digest();

export const revokeSessionRoute = defineRoute({
  method: 'post',
  path: '/sessions/revoke',
  scope: 'write:users',
  operationId: 'revokeSession',
  summary: 'End the session of a token (idempotent); a session token may always end itself (no policy needed)',
  tags: ['sessions'],
  body: tokenBody,
  // Logout: the holder presents the session token as bearer and names it in the body.
  ownCredential: (req, principal) =>
    principal.keyType === 'session' &&
    typeof (req.body as { token?: unknown } | undefined)?.token === 'string' &&
    timingSafeEqual(digest((req.body as { token: string }).token), digest((req.get('authorization') ?? '').replace(/^Bearer /, ''))),
  responses: {
    204: { description: 'The session is ended (or already was)' },
    400: { description: 'No token string in the body', schema: errorSchema },
  },
  async handle({ body }, ctx) {
    await ctx.clients.identity.revokeSession({ environment: ctx.principal.environment, token: body.token }, ctx.call);
    await ctx.verifyCache?.dropToken(`${ctx.principal.environment}:${body.token}`);
    return { status: 204 };
  },
});
