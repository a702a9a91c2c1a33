import { CHAIN_POSITION_MAX, CHAIN_POSITION_MESSAGE } from '@secsvc/shared';
import { z } from 'zod';
import { dataOf, defineRoute, errorSchema } from '../route';

// At most 15 digits (CHAIN_POSITION_MAX): past 2^53 the audit service could not decode the int64 into a JavaScript
// number (a 500 schemathesis found with 16).
const position = z
  .string()
  .regex(new RegExp(`^[1-9][0-9]{0,${String(CHAIN_POSITION_MAX).length - 1}}$`), CHAIN_POSITION_MESSAGE)
  .transform(Number)
  .describe(`a chain position (an integer from 1 to ${CHAIN_POSITION_MAX})`);

const checkpointForm = z.object({
  position: z.number().int(),
  hash: z.string().describe('hex SHA-256 of the chain at that position'),
  signedAt: z.string().describe('ISO 8601 UTC'),
  kid: z.string().describe('the key in GET /v1/logs/keys that signed it'),
  signature: z.string().describe('Ed25519 over "secsvc-audit-checkpoint-v1\\n{environment}\\n{position}\\n{hash}\\n{signedAt}", base64url'),
});

const verdictForm = z.object({
  intact: z.boolean(),
  from: z.number().int(),
  to: z.number().int(),
  entriesChecked: z.number().int(),
  checkpointsChecked: z.number().int(),
  head: z.object({ position: z.number().int(), hash: z.string() }),
  firstBreak: z
    .object({
      position: z.number().int().describe('0 for an entry without a position'),
      id: z.string().optional().describe('the entry found there, when one was'),
      reason: z.enum(['altered', 'missing', 'duplicate', 'checkpoint_mismatch', 'checkpoint_signature', 'unchained']),
    })
    .optional(),
  lastCheckpoint: checkpointForm.optional(),
});

export const verifyLogsRoute = defineRoute({
  method: 'get',
  path: '/logs/verify',
  scope: 'read:logs',
  operationId: 'verifyLogs',
  summary: "Recompute the environment's audit log hash chain over a range of positions: intact, or where it first breaks",
  tags: ['logs'],
  query: z.strictObject({
    from: position.optional().describe('first position (default 1)'),
    to: position.optional().describe('last position, inclusive (default the head)'),
  }),
  responses: {
    200: { description: 'The verdict', schema: dataOf(verdictForm) },
    400: { description: 'from or to is not a position, or to is before from', schema: errorSchema },
  },
  async handle({ query }, ctx) {
    const v = await ctx.clients.audit.verifyLogs({ environment: ctx.principal.environment, from: query.from, to: query.to }, ctx.call);
    return {
      status: 200,
      body: {
        data: {
          intact: v.intact,
          from: v.from,
          to: v.to,
          entriesChecked: v.entriesChecked,
          checkpointsChecked: v.checkpointsChecked,
          head: { position: v.headPosition, hash: v.headHash },
          ...(v.firstBreak && { firstBreak: { position: v.firstBreak.position, ...(v.firstBreak.id && { id: v.firstBreak.id }), reason: v.firstBreak.reason as 'altered' } }),
          ...(v.lastCheckpoint && { lastCheckpoint: { ...v.lastCheckpoint, signedAt: v.lastCheckpoint.signedAt! } }),
        },
      },
    };
  },
});

const jwk = z.object({ kty: z.string(), crv: z.string(), x: z.string(), kid: z.string(), alg: z.string(), use: z.string() });

export const chainKeysRoute = defineRoute({
  method: 'get',
  path: '/logs/keys',
  scope: 'read:logs',
  operationId: 'getLogKeys',
  summary: 'The public keys (JWKS, Ed25519) that verify audit log checkpoints and export manifests offline',
  tags: ['logs'],
  responses: { 200: { description: 'The keys', schema: dataOf(z.object({ keys: z.array(jwk) })) } },
  async handle(_input, ctx) {
    const keys = await ctx.clients.audit.getChainKeys({}, ctx.call);
    return { status: 200, body: { data: JSON.parse(keys.jwksJson) as { keys: z.infer<typeof jwk>[] } } };
  },
});
