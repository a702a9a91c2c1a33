import { findSchemathesis, fuzzSummary, runSchemathesis } from '@secsvc/dev/testing';
import { startTestStack } from './support';

// schemathesis (an independent fuzzer, PyPI) reads the served OpenAPI document and runs every operation with
// every check (--checks all): no 5xx, documented statuses, content types, headers and bodies, schema-valid
// requests accepted and invalid ones refused, unsupported methods, authentication, stateful links. Deterministic
// (fixed seed, deterministic generation) and bounded (a few minutes on 2 cores); `npm run fuzz` is the long run.
// Which checks may meet a 400 for what reason: apps/gateway-e2e/fuzz/schemathesis.toml.

const KEY = `svc_sk_${'fuzzFuzzFuzzFuzz'.repeat(3)}`;
/**
 * The fuzzer sends thousands of requests a minute with one key (the bootstrap key: enterprise plan), as users
 * and, on the open routes, with none: every budget is far above that, so no request is refused with a 429.
 */
const LIMITS = { RATE_LIMIT_ENTERPRISE_PER_MINUTE: '1000000', RATE_LIMIT_USER_PER_MINUTE: '1000000', RATE_LIMIT_ANONYMOUS_PER_MINUTE: '1000000' };

// findTool: $SCHEMATHESIS, else the link scripts/install-tools.sh makes, else PATH; under CI=true missing throws.
const schemathesis = findSchemathesis();
const describeFuzz = schemathesis ? describe : describe.skip; // skip reason: schemathesis is not installed outside CI
describeFuzz(`schemathesis over the served OpenAPI document${schemathesis ? '' : ' [skipped: schemathesis is missing, run scripts/install-tools.sh]'}`, () => {
  let s: Awaited<ReturnType<typeof startTestStack>>;
  beforeAll(async () => {
    s = await startTestStack('fuzz', KEY, LIMITS);
  }, 120_000);
  afterAll(async () => {
    await s?.stop();
  }, 60_000);

  it('finds no failure of any check on any operation', async () => {
    const run = await runSchemathesis({
      binary: schemathesis!,
      baseUrl: s.stack.baseUrl,
      apiKey: KEY,
      seed: 20261124,
      deterministic: true,
      maxExamples: 10,
      workers: 2,
      // FUZZ_REPORT_DIR keeps report.json and junit.xml (CI artifacts); by default they are temporary.
      reportDir: process.env.FUZZ_REPORT_DIR,
    });
    // On failure the message is schemathesis's own: each failing operation with its checks, the response and a
    // curl command that reproduces it (the console output when it wrote no report).
    const message = `schemathesis exit code ${run.exitCode}\n${fuzzSummary(run.report)}\n\n${run.failures.join('\n\n') || run.output.slice(-20_000)}`;
    expect({ code: run.exitCode, failures: run.report?.test_cases.unique_failures, errors: run.report?.errors.length, message: run.exitCode === 0 ? '' : message }).toEqual({
      code: 0,
      failures: 0,
      errors: 0,
      message: '',
    });
    // It ran: every operation but the excluded ones, with thousands of cases.
    expect(run.report!.operations?.tested).toBe(run.report!.operations?.selected);
    expect(run.report!.test_cases.generated).toBeGreaterThan(2_000);
  }, 600_000);
});
