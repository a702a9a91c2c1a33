import type { AppError } from '@secsvc/shared';
import type { ChainVerdict, Checkpoint } from '../chain';
import { verifyChainRange } from './chain-verification';

const verdict: ChainVerdict = {
  environment: 'live',
  intact: true,
  from: 1,
  to: 9,
  entriesChecked: 9,
  checkpointsChecked: 1,
  head: { position: 9, hash: 'ab'.repeat(32) },
};
const checkpoint = (position: number): Checkpoint => ({ environment: 'live', position, hash: 'cd'.repeat(32), signedAt: '2026-11-01T00:00:00.000Z', kid: 'ck_1', signature: 'sig' });

function fakeChain(checkpoints: Checkpoint[]) {
  const asked: [string, { from?: number; to?: number }][] = [];
  return {
    asked,
    chain: {
      verify: async (environment: string, range: { from?: number; to?: number } = {}) => {
        asked.push([environment, range]);
        return verdict;
      },
      checkpoints: async () => checkpoints,
    },
  };
}

test('verifies the range asked for and names the last checkpoint', async () => {
  const { chain, asked } = fakeChain([checkpoint(5), checkpoint(8)]);
  expect(await verifyChainRange(chain, 'live', { from: 2, to: 9 })).toEqual({ verdict, lastCheckpoint: checkpoint(8) });
  expect(await verifyChainRange(fakeChain([]).chain, 'live', {})).toEqual({ verdict, lastCheckpoint: undefined });
  expect(asked).toEqual([['live', { from: 2, to: 9 }]]);
});

test('a range that is not of chain positions is a 400 naming its fields, and nothing is verified', async () => {
  const { chain, asked } = fakeChain([]);
  const fields = async (range: { from?: number; to?: number }) => {
    const err = await verifyChainRange(chain, 'live', range).then(() => undefined, (e: AppError) => e);
    if (err) expect(err.code).toBe('invalid_request');
    return err?.details.map((d) => d.field) ?? [];
  };
  expect(await fields({ from: 0 })).toEqual(['from']);
  expect(await fields({ from: 1.5, to: Number.MAX_SAFE_INTEGER + 2 })).toEqual(['from', 'to']);
  expect(await fields({ from: 5, to: 4 })).toEqual(['to']);
  // 15 digits at most, as the REST API takes them.
  expect(await fields({ to: 1_000_000_000_000_000 })).toEqual(['to']);
  expect(await fields({ from: 5, to: 5 })).toEqual([]);
  expect(await fields({ from: 999_999_999_999_999 })).toEqual([]);
  expect(asked).toEqual([
    ['live', { from: 5, to: 5 }],
    ['live', { from: 999_999_999_999_999, to: undefined }],
  ]);
});
