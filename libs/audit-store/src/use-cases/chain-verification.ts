import { AppError, CHAIN_POSITION_MAX, CHAIN_POSITION_MESSAGE, type FieldError } from '@secsvc/shared';
import type { AuditChain, ChainVerdict, Checkpoint } from '../chain';


/**
 * Recomputes the environment's chain over `from`..`to` (positions, inclusive; a faulty range is a 400 naming
 * the field): intact, or where it first breaks; with the environment's last signed checkpoint.
 */
export async function verifyChainRange(
  chain: Pick<AuditChain, 'verify' | 'checkpoints'>,
  environment: string,
  range: { from?: number; to?: number },
): Promise<{ verdict: ChainVerdict; lastCheckpoint: Checkpoint | undefined }> {
  const errors: FieldError[] = [];
  for (const field of ['from', 'to'] as const) {
    const v = range[field];
    if (v !== undefined && (!Number.isInteger(v) || v < 1 || v > CHAIN_POSITION_MAX)) errors.push({ field, message: CHAIN_POSITION_MESSAGE });
  }
  if (!errors.length && range.from !== undefined && range.to !== undefined && range.to < range.from) errors.push({ field: 'to', message: 'must not be before from' });
  if (errors.length) throw new AppError('invalid_request', 'Invalid verification range', errors);
  const verdict = await chain.verify(environment, { from: range.from, to: range.to });
  const lastCheckpoint = (await chain.checkpoints(environment)).at(-1);
  return { verdict, lastCheckpoint };
}
