// npm-opa-wasm#143 (memory growth on repeated evaluate): 1,000,000 evaluations (the soak) must leave
// the module's linear memory where it was after warm-up and the JS heap's floor flat. Count-based, no timing.
// The same run with its figures printed: `npm run rego:soak` (figures in rego/README.md).
import { soak } from './support/soak';

test('memory stays flat over 1,000,000 evaluations', async () => {
  const result = await soak(1_000_000);

  expect(result.samples).toHaveLength(100);
  // The module's memory only ever grows by whole 64 KiB pages; a leak of even a few bytes per evaluation
  // would add megabytes over 900,000 evaluations. One page of slack.
  expect(result.wasmBytesAfterWarmup).toBeGreaterThan(0);
  expect(result.wasmBytesAtEnd - result.wasmBytesAfterWarmup).toBeLessThanOrEqual(64 * 1024);
  // The heap's floor (its lowest sample, i.e. after collections) is flat within 16 MiB; retaining a result
  // or input per evaluation would add far more.
  expect(result.heapFloorLate - result.heapFloorEarly).toBeLessThan(16 * 2 ** 20);
  // The workload really decides: a mix of allows and denies.
  expect(result.allowed).toBeGreaterThan(1000);
  expect(result.allowed).toBeLessThan(999_000);
}, 600_000);
