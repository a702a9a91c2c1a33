import { z } from 'zod';
import { dataOf, defineRoute, errorSchema } from '../route';

export const issueTokenRoute = defineRoute({
  method: 'post',
  path: '/tokens',
  operationId: 'issueAccessToken',
  summary: 'Exchange a session token for a short-lived JWT access token (ES256, verified at the gateway)',
  tags: ['auth'],
  keyTypes: ['secret', 'test', 'public'],
  anonymous: true,
  body: z.strictObject({
    sessionToken: z.string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') }).min(1, 'is required').max(512, 'is too long'),
  }),
  responses: {
    200: {
      description: 'The access token',
      schema: dataOf(z.object({ accessToken: z.string(), tokenType: z.literal('Bearer'), expiresIn: z.number().int() })),
    },
    401: { description: 'Invalid, expired or revoked session token (field sessionToken)', schema: errorSchema },
  },
  async handle({ body }, ctx) {
    const token = await ctx.clients.identity.issueAccessToken({ sessionToken: body.sessionToken }, ctx.call);
    return { status: 200, body: { data: { accessToken: token.accessToken, tokenType: 'Bearer', expiresIn: token.expiresIn } } };
  },
});
