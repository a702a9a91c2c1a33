import { createdSessionForm, sessionOf } from '../sessions/schemas';
import { dataOf, defineRoute, errorSchema } from '../route';
import { loginBody } from './schemas';

export const loginRoute = defineRoute({
  method: 'post',
  path: '/auth/login',
  operationId: 'login',
  summary: 'Log in with email and password: a session (needs a public key or no key at all)',
  tags: ['auth'],
  keyTypes: ['secret', 'test', 'public'],
  anonymous: true,
  body: loginBody,
  responses: {
    201: { description: 'A new session (the token is in this response only)', schema: dataOf(createdSessionForm) },
    401: { description: 'Invalid email or password (the same answer for an unknown email)', schema: errorSchema },
    429: { description: 'Too many failures for the account (5) or the ip (20) in 15 minutes; Retry-After', schema: errorSchema },
  },
  async handle({ body }, ctx) {
    const created = await ctx.clients.identity.login(
      {
        environment: ctx.principal.environment,
        email: body.email,
        password: body.password,
        ip: ctx.call.headers['x-client-ip'] ?? '',
        userAgent: ctx.call.headers['x-user-agent'] ?? '',
        expiresInSeconds: 0,
        oauthClientId: '',
      },
      ctx.call,
    );
    return { status: 201, body: { data: { ...sessionOf(created.session!), token: created.token } } };
  },
});
