import { MemoryRateLimitStore } from '../../src/rate-limit/memory-store';
import { describeStoreContract, fresh, T0 } from './store-contract';

const store = new MemoryRateLimitStore();
describeStoreContract('memory', () => store);

describe('memory store', () => {
  it('forgets subjects whose bucket is full again (memory stays bounded)', async () => {
    const s = new MemoryRateLimitStore();
    for (let i = 0; i < 50; i++) await s.consume(fresh('ip'), 100, T0);
    expect(s.size).toBe(50);
    // 61 s later every bucket has drained and every report window has ended; the next call sweeps them.
    await s.consume(fresh('ip'), 100, T0 + 61_000_000);
    expect(s.size).toBe(1);
  });
});
