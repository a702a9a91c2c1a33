import { dataOf, defineRoute, errorSchema } from '../route';
import { checkIds, factorForm, factorOf, passkeyChallengeForm, passkeyChallengeOf, registerPasskeyBody, userFactorsParams } from './schemas';

export const passkeyRegistrationOptionsRoute = defineRoute({
  method: 'post',
  path: '/users/:id/mfa/passkeys/options',
  operationId: 'passkeyRegistrationOptions',
  summary: 'Start registering a passkey: options for navigator.credentials.create() (discoverable, user verification required)',
  tags: ['mfa'],
  params: userFactorsParams,
  responses: {
    200: { description: 'The challenge (5 minutes) and the creation options', schema: dataOf(passkeyChallengeForm) },
    404: { description: 'No such user', schema: errorSchema },
  },
  async handle({ params }, ctx) {
    checkIds(params.id);
    const c = await ctx.clients.identity.startPasskeyRegistration({ environment: ctx.principal.environment, userId: params.id }, ctx.call);
    return { status: 200, body: { data: passkeyChallengeOf(c) } };
  },
});

export const registerPasskeyRoute = defineRoute({
  method: 'post',
  path: '/users/:id/mfa/passkeys',
  operationId: 'registerPasskey',
  summary: "Finish registering a passkey with the browser's credential (user.mfa.factor_added)",
  tags: ['mfa'],
  params: userFactorsParams,
  body: registerPasskeyBody,
  responses: {
    201: { description: 'The passkey factor', schema: dataOf(factorForm) },
    400: { description: 'Unknown or used challenge, or a credential that does not verify (named in details)', schema: errorSchema },
    404: { description: 'No such user', schema: errorSchema },
    409: { description: 'This passkey is registered already, or the user has the most factors allowed', schema: errorSchema },
  },
  async handle({ params, body }, ctx) {
    checkIds(params.id);
    const f = await ctx.clients.identity.finishPasskeyRegistration(
      { environment: ctx.principal.environment, userId: params.id, challengeId: body.challengeId, name: body.name ?? '', credentialJson: JSON.stringify(body.credential) },
      ctx.call,
    );
    return { status: 201, body: { data: factorOf(f) } };
  },
});
