// In-process evaluation latency of the wasm engine with 10, 1,000 and 10,000 stored policies.
//   node test/support/run-ts.js test/support/latency.ts [evaluations per size, default 20000]
// Prints p50/p99/max in microseconds per size, for the service-like policy mix of generate.ts
// (servicePolicies) and for a worst case where every policy is a candidate (all principals `*`).
/* eslint-disable no-console -- a command-line measurement script reports on stdout */
import { performance } from 'node:perf_hooks';
import { loadEngine } from '../../src/engine';
import type { EnginePolicy } from '../../src/engine';
import { seeded, serviceRequest, servicePolicies } from './generate';

function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

async function measure(label: string, policies: EnginePolicy[], evaluations: number): Promise<void> {
  const engine = await loadEngine();
  const loadStart = performance.now();
  engine.setPolicies(policies);
  const loadMs = performance.now() - loadStart;
  const rng = seeded(7);
  const requests = Array.from({ length: 1000 }, () => serviceRequest(rng));
  for (let i = 0; i < 2000; i++) engine.evaluate(requests[i % requests.length]!);
  const times = new Float64Array(evaluations);
  let matched = 0;
  for (let i = 0; i < evaluations; i++) {
    const start = performance.now();
    const decision = engine.evaluate(requests[i % requests.length]!);
    times[i] = performance.now() - start;
    matched += decision.matchedPolicies.length;
  }
  times.sort();
  const us = (ms: number) => (ms * 1000).toFixed(0).padStart(6);
  console.log(
    `${label.padEnd(28)} policies ${String(policies.length).padStart(6)}  p50 ${us(percentile(times, 50))} us  ` +
      `p99 ${us(percentile(times, 99))} us  max ${us(times[times.length - 1]!)} us  ` +
      `matched/eval ${(matched / evaluations).toFixed(1)}  setPolicies ${loadMs.toFixed(0)} ms  ` +
      `wasm memory ${(engine.wasmMemoryBytes / 2 ** 20).toFixed(1)} MiB`,
  );
}

async function main(): Promise<void> {
  const evaluations = Number(process.argv[2] ?? 20000);
  console.log(`node ${process.version}, ${evaluations} evaluations per size`);
  for (const size of [10, 1000, 10000]) {
    await measure('service mix', servicePolicies(seeded(size), size), evaluations);
  }
  for (const size of [10, 1000, 10000]) {
    const everyone = servicePolicies(seeded(size), size).map((p) => ({ ...p, principals: ['*'] }));
    await measure('worst case (all principals *)', everyone, Math.min(evaluations, 2000));
  }
}

void main();
