import type { audit } from '@secsvc/proto';
import { AppError } from '@secsvc/shared';
import { environmentOf, type AuditContext } from '../context';

const POSITION_MAX = Number.MAX_SAFE_INTEGER;

/** Recomputes the environment's chain over `from`..`to` (positions, inclusive): intact, or where it first breaks. */
export const verifyLogs =
  (ctx: AuditContext) =>
  async (req: audit.VerifyLogsRequest): Promise<audit.LogsVerdict> => {
    const environment = environmentOf(req.environment);
    if (!ctx.chain) throw new AppError('unavailable', 'The audit log chain is not configured on this audit service');
    const errors: { field: string; message: string }[] = [];
    for (const field of ['from', 'to'] as const) {
      const v = req[field];
      if (v !== undefined && (!Number.isInteger(v) || v < 1 || v > POSITION_MAX)) errors.push({ field, message: 'must be a chain position (an integer from 1)' });
    }
    if (!errors.length && req.from !== undefined && req.to !== undefined && req.to < req.from) errors.push({ field: 'to', message: 'must not be before from' });
    if (errors.length) throw new AppError('invalid_request', 'Invalid verification range', errors);
    const verdict = await ctx.chain.verify(environment, { from: req.from, to: req.to });
    const last = (await ctx.chain.checkpoints(environment)).at(-1);
    return {
      intact: verdict.intact,
      from: verdict.from,
      to: verdict.to,
      entriesChecked: verdict.entriesChecked,
      checkpointsChecked: verdict.checkpointsChecked,
      headPosition: verdict.head.position,
      headHash: verdict.head.hash,
      firstBreak: verdict.firstBreak && { position: verdict.firstBreak.position, id: verdict.firstBreak.id ?? '', reason: verdict.firstBreak.reason },
      lastCheckpoint: last && { position: last.position, hash: last.hash, signedAt: last.signedAt, kid: last.kid, signature: last.signature },
    };
  };

/** The JWKS whose keys verify checkpoints (and export manifests) offline. */
export const getChainKeys = (ctx: AuditContext) => async (): Promise<audit.ChainKeys> => {
  if (!ctx.chain) throw new AppError('unavailable', 'The audit log chain is not configured on this audit service');
  return { jwksJson: JSON.stringify({ keys: [ctx.chain.key.jwk()] }) };
};
