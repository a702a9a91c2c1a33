import { ACR_MFA, AppError } from '@secsvc/shared';
import { z } from 'zod';
import { credentialField, factorName, passkeyChallengeForm, passkeyChallengeOf, proofShape, totpEnrollmentForm, totpEnrollmentOf } from '../mfa/schemas';
import { createdSessionForm, sessionForm, sessionOf } from '../sessions/schemas';
import { dataOf, defineRoute, errorSchema } from '../route';

const required = (what: string) => ({ error: (i: { input: unknown }) => (i.input === undefined ? 'is required' : `must be ${what}`) });

const loginMfaBody = z.strictObject({ mfaToken: z.string(required('a string')).max(128, 'is too long'), ...proofShape });
const passkeyLoginBody = z.strictObject({ challengeId: z.string(required('a string')).max(64, 'is too long'), credential: credentialField });
const stepUpBody = z.strictObject({ ...proofShape, challengeId: z.string(required('a string')).max(64, 'is too long').optional() });

const proofOf = (b: { type: string; code?: string; credential?: Record<string, unknown> }) => ({
  type: b.type,
  code: b.code ?? '',
  credentialJson: b.credential ? JSON.stringify(b.credential) : '',
});

const origin = (headers: Record<string, string>) => ({ ip: headers['x-client-ip'] ?? '', userAgent: headers['x-user-agent'] ?? '' });

const secondFactorResponses = {
  400: { description: 'A malformed proof, or an unknown, used or expired token or challenge (named in details)', schema: errorSchema },
  401: { description: 'The factor was not accepted (user.mfa.failed): a wrong or replayed code, a used recovery code, a passkey that does not verify or whose counter went back', schema: errorSchema },
  429: { description: 'Too many failed proofs for the user (5) or the ip (20) in 15 minutes; Retry-After', schema: errorSchema },
};

export const loginMfaRoute = defineRoute({
  method: 'post',
  path: '/auth/login/mfa',
  operationId: 'loginMfa',
  summary: "A login's second step: the mfaToken and a TOTP code, a recovery code or a passkey's assertion; a session",
  tags: ['auth'],
  keyTypes: ['secret', 'test', 'public'],
  anonymous: true,
  body: loginMfaBody,
  responses: {
    201: { description: 'A new session, amr naming the factors (the token is in this response only)', schema: dataOf(createdSessionForm) },
    ...secondFactorResponses,
  },
  async handle({ body }, ctx) {
    const created = await ctx.clients.identity.completeMfaLogin(
      { environment: ctx.principal.environment, mfaToken: body.mfaToken, proof: proofOf(body), ...origin(ctx.call.headers) },
      ctx.call,
    );
    return { status: 201, body: { data: { ...sessionOf(created.session!), token: created.token } } };
  },
});

export const loginMfaEnrollTotpRoute = defineRoute({
  method: 'post',
  path: '/auth/login/mfa/totp',
  operationId: 'loginMfaEnrollTotp',
  summary: 'A user who must use MFA and has no factor yet enrolls TOTP during the second step; the first code to /auth/login/mfa confirms it',
  tags: ['auth'],
  keyTypes: ['secret', 'test', 'public'],
  anonymous: true,
  body: z.strictObject({ mfaToken: z.string(required('a string')).max(128, 'is too long'), name: factorName.optional() }),
  responses: {
    201: { description: 'A pending TOTP factor: its secret, otpauth:// URI and QR code (shown once)', schema: dataOf(totpEnrollmentForm) },
    400: { description: 'An unknown, used or expired mfaToken', schema: errorSchema },
    409: { description: 'The user has a factor already: answer the challenge with it', schema: errorSchema },
  },
  async handle({ body }, ctx) {
    const e = await ctx.clients.identity.enrollTotpForLogin({ environment: ctx.principal.environment, mfaToken: body.mfaToken, name: body.name ?? '' }, ctx.call);
    return { status: 201, body: { data: totpEnrollmentOf(e) } };
  },
});

export const passkeyLoginOptionsRoute = defineRoute({
  method: 'post',
  path: '/auth/passkeys/options',
  operationId: 'passkeyLoginOptions',
  summary: 'Start a passwordless login with a passkey: options for navigator.credentials.get() (any passkey of the environment)',
  tags: ['auth'],
  keyTypes: ['secret', 'test', 'public'],
  anonymous: true,
  responses: { 200: { description: 'The challenge (5 minutes) and the request options', schema: dataOf(passkeyChallengeForm) } },
  async handle(_input, ctx) {
    const c = await ctx.clients.identity.startPasskeyAuthentication({ environment: ctx.principal.environment, userId: '' }, ctx.call);
    return { status: 200, body: { data: passkeyChallengeOf(c) } };
  },
});

export const passkeyLoginRoute = defineRoute({
  method: 'post',
  path: '/auth/passkeys/login',
  operationId: 'passkeyLogin',
  summary: "A passwordless login: the browser's assertion for the challenge; a session (a passkey with user verification counts as MFA)",
  tags: ['auth'],
  keyTypes: ['secret', 'test', 'public'],
  anonymous: true,
  body: passkeyLoginBody,
  responses: {
    201: { description: 'A new session, amr hwk+user+mfa (the token is in this response only)', schema: dataOf(createdSessionForm) },
    ...secondFactorResponses,
  },
  async handle({ body }, ctx) {
    const created = await ctx.clients.identity.completePasskeyLogin(
      {
        environment: ctx.principal.environment,
        challengeId: body.challengeId,
        credentialJson: JSON.stringify(body.credential),
        ...origin(ctx.call.headers),
        expiresInSeconds: 0,
        oauthClientId: '',
      },
      ctx.call,
    );
    return { status: 201, body: { data: { ...sessionOf(created.session!), token: created.token } } };
  },
});

/** Step-up acts on the session token the caller presented: a session, never an API key or access token. */
const ownSession = (_req: unknown, principal: { keyType: string }) => principal.keyType === 'session';

function requireSession(keyType: string): void {
  if (keyType !== 'session') {
    throw new AppError('forbidden', `Step-up needs a session token as the credential; an OAuth client steps up by a new authorization request with acr_values=${ACR_MFA}`);
  }
}

export const stepUpOptionsRoute = defineRoute({
  method: 'post',
  path: '/auth/step-up/options',
  operationId: 'stepUpOptions',
  summary: "Start a step-up with a passkey: options for navigator.credentials.get() over the session user's passkeys",
  tags: ['auth'],
  ownCredential: ownSession,
  responses: {
    200: { description: 'The challenge (5 minutes) and the request options', schema: dataOf(passkeyChallengeForm) },
    403: { description: 'The credential is not a session token', schema: errorSchema },
    409: { description: 'The user has no passkey', schema: errorSchema },
  },
  async handle(_input, ctx) {
    requireSession(ctx.principal.keyType);
    const c = await ctx.clients.identity.startPasskeyAuthentication({ environment: ctx.principal.environment, userId: ctx.principal.id }, ctx.call);
    return { status: 200, body: { data: passkeyChallengeOf(c) } };
  },
});

export const stepUpRoute = defineRoute({
  method: 'post',
  path: '/auth/step-up',
  operationId: 'stepUp',
  summary: 'Step up the session presented as the credential with a factor (user.mfa.step_up): calls that policy says need MFA then pass',
  tags: ['auth'],
  ownCredential: ownSession,
  body: stepUpBody,
  responses: {
    200: { description: 'The session, mfaAt now and amr with the factor', schema: dataOf(sessionForm) },
    403: { description: 'The credential is not a session token', schema: errorSchema },
    ...secondFactorResponses,
  },
  async handle({ body }, ctx) {
    requireSession(ctx.principal.keyType);
    const s = await ctx.clients.identity.stepUpSession(
      { environment: ctx.principal.environment, sessionId: ctx.principal.credentialId, proof: proofOf(body), challengeId: body.challengeId ?? '', ip: ctx.call.headers['x-client-ip'] ?? '' },
      ctx.call,
    );
    ctx.authenticationChanged?.(s.id);
    return { status: 200, body: { data: sessionOf(s) } };
  },
});
