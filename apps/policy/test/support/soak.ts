// Memory soak of the wasm engine (npm-opa-wasm#143: memory growth on repeated evaluate).
//   node test/support/run-ts.js test/support/soak.ts [evaluations, default 1000000]
// test/engine-soak.test.ts runs the same loop with 200,000 evaluations and asserts the result.
/* eslint-disable no-console -- a command-line measurement script reports on stdout */
import path from 'node:path';
import { loadEngine } from '../../src/engine';
import type { AuthzRequest, PolicyEngine } from '../../src/engine';
import { seeded, serviceRequest, servicePolicies } from './generate';

export interface SoakSample {
  evaluations: number;
  wasmBytes: number;
  heapUsedBytes: number;
  rssBytes: number;
}

export interface SoakResult {
  samples: SoakSample[];
  /** Linear memory of the module once every request shape (including the largest input) has been seen. */
  wasmBytesAfterWarmup: number;
  wasmBytesAtEnd: number;
  /** Lowest heapUsed over the first and over the last quarter of the samples (after warm-up): the live size between collections. */
  heapFloorEarly: number;
  heapFloorLate: number;
  allowed: number;
}

/**
 * Evaluates `evaluations` requests against 200 service-like policies. Every 1,000th request carries a 16 KiB
 * resource path (the SDK grows memory for large inputs, #89/#92), and the policies are replaced every 50,000
 * evaluations (setData resets the heap, as a policy change does in the service).
 */
export async function soak(evaluations: number, onSample?: (s: SoakSample) => void): Promise<SoakResult> {
  const engine: PolicyEngine = await loadEngine();
  const policySets = [servicePolicies(seeded(1), 200), servicePolicies(seeded(2), 200)];
  engine.setPolicies(policySets[0]!);
  const rng = seeded(3);
  const requests: AuthzRequest[] = Array.from({ length: 997 }, () => serviceRequest(rng));
  const big: AuthzRequest = { ...requests[0]!, resource: `/users/${'x'.repeat(16 * 1024)}` };

  const warmup = Math.min(20_000, Math.floor(evaluations / 10));
  const sampleEvery = Math.max(1, Math.floor(evaluations / 100));
  const samples: SoakSample[] = [];
  let wasmBytesAfterWarmup = 0;
  let allowed = 0;
  for (let i = 1; i <= evaluations; i++) {
    if (i % 50_000 === 0) engine.setPolicies(policySets[(i / 50_000) % 2]!);
    const request = i % 1000 === 0 ? big : requests[i % requests.length]!;
    if (engine.evaluate(request).allowed) allowed += 1;
    if (i === warmup) wasmBytesAfterWarmup = engine.wasmMemoryBytes;
    if (i % sampleEvery === 0) {
      const mem = process.memoryUsage();
      const sample = { evaluations: i, wasmBytes: engine.wasmMemoryBytes, heapUsedBytes: mem.heapUsed, rssBytes: mem.rss };
      samples.push(sample);
      onSample?.(sample);
    }
  }
  const afterWarmup = samples.filter((s) => s.evaluations > warmup);
  const quarter = Math.max(1, Math.floor(afterWarmup.length / 4));
  const floor = (xs: SoakSample[]) => Math.min(...xs.map((s) => s.heapUsedBytes));
  return {
    samples,
    wasmBytesAfterWarmup,
    wasmBytesAtEnd: engine.wasmMemoryBytes,
    heapFloorEarly: floor(afterWarmup.slice(0, quarter)),
    heapFloorLate: floor(afterWarmup.slice(-quarter)),
    allowed,
  };
}

// Run as a script (through run-ts.js, which leaves the script's path in argv[1]), not when imported by a test.
if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === __filename) {
  const evaluations = Number(process.argv[2] ?? 1_000_000);
  const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;
  let next = 0;
  void soak(evaluations, (s) => {
    if (s.evaluations >= next) {
      console.log(`${String(s.evaluations).padStart(8)} evaluations  wasm ${mib(s.wasmBytes)}  heapUsed ${mib(s.heapUsedBytes)}  rss ${mib(s.rssBytes)}`);
      next += evaluations / 10;
    }
  }).then((r) => {
    console.log(
      `wasm memory after warm-up ${mib(r.wasmBytesAfterWarmup)}, at the end ${mib(r.wasmBytesAtEnd)}; ` +
        `heap floor early ${mib(r.heapFloorEarly)}, late ${mib(r.heapFloorLate)}; allowed ${r.allowed}/${evaluations}`,
    );
  });
}
