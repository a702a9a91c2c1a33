import type { audit } from '@secsvc/proto';
import { verifyChainRange } from '@secsvc/audit-store';
import { AppError, environmentOf } from '@secsvc/shared';
import type { AuditContext } from '../context';
import { toLogsVerdict } from './messages';

const chainOf = (ctx: AuditContext) => {
  if (!ctx.chain) throw new AppError('unavailable', 'The audit log chain is not configured on this audit service');
  return ctx.chain;
};

/** Recomputes the environment's chain over `from`..`to` (positions, inclusive): intact, or where it first breaks. */
export const verifyLogs =
  (ctx: AuditContext) =>
  async (req: audit.VerifyLogsRequest): Promise<audit.LogsVerdict> => {
    const environment = environmentOf(req.environment);
    const { verdict, lastCheckpoint } = await verifyChainRange(chainOf(ctx), environment, req);
    return toLogsVerdict(verdict, lastCheckpoint);
  };

/** The JWKS whose keys verify checkpoints (and export manifests) offline. */
export const getChainKeys = (ctx: AuditContext) => async (): Promise<audit.ChainKeys> => ({ jwksJson: JSON.stringify({ keys: [chainOf(ctx).key.jwk()] }) });
