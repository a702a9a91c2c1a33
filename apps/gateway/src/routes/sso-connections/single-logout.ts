import { AppError } from '@secsvc/shared';
import { z } from 'zod';
import { identityRequestStore, singleLogoutUrl } from '../../sso/sp';
import { dataOf, defineRoute, errorSchema } from '../route';

const body = z.strictObject({
  token: z.string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') }).max(512, 'is too long'),
  returnTo: z
    .string({ error: () => 'must be a string' })
    .max(2048, 'must be at most 2048 characters')
    .regex(/^https?:\/\/[^\s]+$/, 'must be an absolute http(s) URL')
    .optional()
    .describe('where the browser goes once the IdP has logged the user out'),
});

const answer = z.object({
  revoked: z.boolean().describe('false when the token named no active session (idempotent)'),
  logoutUrl: z
    .string()
    .nullable()
    .describe("for a session a SAML login opened: send the user's browser here (a signed LogoutRequest to the IdP); null otherwise"),
});

export const singleLogoutRoute = defineRoute({
  method: 'post',
  path: '/sso/logout',
  operationId: 'samlSingleLogout',
  summary: 'End a session and, when a SAML login opened it, get the URL that logs the user out at the IdP',
  tags: ['sso'],
  body,
  responses: {
    200: { description: 'The session is ended (or already was); the IdP logout URL for SAML sessions', schema: dataOf(answer) },
    400: { description: 'A faulty field, named', schema: errorSchema },
  },
  async handle({ body }, ctx) {
    const environment = ctx.principal.environment;
    const out = await ctx.clients.identity.revokeSession({ environment, token: body.token }, ctx.call);
    await ctx.verifyCache?.dropToken(`${environment}:${body.token}`);
    let logoutUrl: string | undefined;
    if (out.saml && ctx.sso?.keys) {
      const connection = await ctx.clients.identity
        .getSsoConnection({ environment, id: out.saml.connectionId, anyEnvironment: false }, ctx.call)
        .catch((err: unknown) => {
          // The connection was deleted since the login: nothing to log out of.
          if (err instanceof AppError && err.code === 'not_found') return undefined;
          throw err;
        });
      if (connection) logoutUrl = await singleLogoutUrl(connection, { ...ctx.sso, keys: ctx.sso.keys }, identityRequestStore(ctx.clients.identity, ctx.call), out.saml, body.returnTo ?? '');
    }
    return { status: 200, body: { data: { revoked: out.revoked, logoutUrl: logoutUrl ?? null } } };
  },
});
