import type { identity } from '@secsvc/proto';
import { z } from 'zod';
import { factorForm, factorOf } from '../mfa/schemas';
import { createdSessionForm, sessionOf } from '../sessions/schemas';
import { dataOf, defineRoute, errorSchema } from '../route';
import { loginBody } from './schemas';

/** The answer of a login that needs its second step (POST /v1/auth/login/mfa). */
export const mfaChallengeForm = z.object({
  mfaRequired: z.literal(true),
  mfaToken: z.string().describe('mft_...: answers the second step once, within 5 minutes'),
  expiresAt: z.string().describe('ISO 8601 UTC'),
  factors: z.array(factorForm).describe("The user's confirmed factors (no secrets)"),
  passkey: z
    .record(z.string(), z.unknown())
    .nullable()
    .describe('When the user has passkeys: options for navigator.credentials.get() (PublicKeyCredentialRequestOptionsJSON)'),
  enrollmentRequired: z.boolean().describe('MFA is required of the user, who has no factor yet: enroll TOTP with POST /v1/auth/login/mfa/totp first'),
});

export function mfaChallengeOf(c: identity.MfaChallenge): z.infer<typeof mfaChallengeForm> {
  return {
    mfaRequired: true,
    mfaToken: c.mfaToken,
    expiresAt: c.expiresAt!,
    factors: c.factors.map(factorOf),
    passkey: c.passkeyOptionsJson ? (JSON.parse(c.passkeyOptionsJson) as Record<string, unknown>) : null,
    enrollmentRequired: c.enrollmentRequired,
  };
}

export const loginRoute = defineRoute({
  method: 'post',
  path: '/auth/login',
  operationId: 'login',
  summary: 'Log in with email and password: a session, or an MFA challenge (needs a public key or no key at all)',
  tags: ['auth'],
  keyTypes: ['secret', 'test', 'public'],
  anonymous: true,
  body: loginBody,
  responses: {
    200: { description: 'The password was right and a second factor is needed: answer with POST /v1/auth/login/mfa', schema: dataOf(mfaChallengeForm) },
    201: { description: 'A new session (the token is in this response only)', schema: dataOf(createdSessionForm) },
    401: { description: 'Invalid email or password (the same answer for an unknown email)', schema: errorSchema },
    429: { description: 'Too many failures for the account (5) or the ip (20) in 15 minutes; Retry-After', schema: errorSchema },
  },
  async handle({ body }, ctx) {
    const result = await ctx.clients.identity.login(
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
    if (result.mfa) return { status: 200, body: { data: mfaChallengeOf(result.mfa) } };
    const created = result.session!;
    return { status: 201, body: { data: { ...sessionOf(created.session!), token: created.token } } };
  },
});
