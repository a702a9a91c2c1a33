import { dataOf, defineRoute, errorSchema } from '../route';
import { mfaSettingsBody, mfaSettingsForm, mfaSettingsOf } from './schemas';

export const getMfaSettingsRoute = defineRoute({
  method: 'get',
  path: '/mfa/settings',
  operationId: 'getMfaSettings',
  summary: "Who the environment requires MFA of: nobody (off), every user (all), or users holding one of roles",
  tags: ['mfa'],
  responses: { 200: { description: 'The settings', schema: dataOf(mfaSettingsForm) } },
  async handle(_input, ctx) {
    return { status: 200, body: { data: mfaSettingsOf(await ctx.clients.identity.getMfaSettings({ environment: ctx.principal.environment }, ctx.call)) } };
  },
});

export const updateMfaSettingsRoute = defineRoute({
  method: 'put',
  path: '/mfa/settings',
  operationId: 'updateMfaSettings',
  summary: 'Require MFA of every user or of roles (mfa.settings.updated): their logins then need a second factor',
  tags: ['mfa'],
  body: mfaSettingsBody,
  responses: {
    200: { description: 'The settings', schema: dataOf(mfaSettingsForm) },
    400: { description: 'An unknown mode, or roles that are not role_<name> (each named)', schema: errorSchema },
  },
  async handle({ body }, ctx) {
    const s = await ctx.clients.identity.updateMfaSettings({ environment: ctx.principal.environment, required: body.required, roles: body.roles ?? [] }, ctx.call);
    return { status: 200, body: { data: mfaSettingsOf(s) } };
  },
});
