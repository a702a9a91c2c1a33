// `npm run fuzz`: a long schemathesis run (every check, every operation but the excluded ones) against the whole
// local stack started on free ports in a temporary data directory, then a summary: cases run, failures by check,
// and how many responses had a status >= 500 (counted by the gateway itself, from its http_requests_total).
// Builds nothing: run `npm run build` first (the apps start from their dist folders). Needs schemathesis:
// `bash scripts/install-tools.sh`, or SCHEMATHESIS=<path>.
//
//   FUZZ_EXAMPLES  examples per operation and phase (default 2000: about 85 operations x 2000 > 100,000 cases)
//   FUZZ_SEED      the seed (default: a random one, printed; the same seed repeats the run)
//   FUZZ_WORKERS   schemathesis workers (default 2)
//   FUZZ_OPERATIONS only these operationIds, comma-separated (a finding's operation again; default: all)
//   FUZZ_REPORT_DIR where the JUnit XML and JSON reports go (default apps/gateway-e2e/test-output/fuzz, gitignored)
//
// Exit code 0 only when schemathesis found nothing and no response was a 5xx; 1 otherwise.
const { randomInt } = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { BENCH_LIMITS, KEY, startBenchStack } = require('../bench/support');
const { findSchemathesis, fuzzSummary, runSchemathesis } = require('@secsvc/dev/testing');

const ROOT = path.resolve(__dirname, '..');

const int = (name, fallback) => {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return Number(raw);
};

/** Responses of the gateway with a status >= 500, from its Prometheus counters (every route, every method). */
async function serverErrors(adminUrl) {
  const text = await (await globalThis.fetch(`${adminUrl}/metrics`)).text();
  let total = 0;
  for (const m of text.matchAll(/^http_requests_total\{([^}]*)\} (\d+(?:\.\d+)?(?:e\+\d+)?)$/gm)) {
    if (/(?:^|,)status="5\d\d"/.test(m[1])) total += Number(m[2]);
  }
  return total;
}

async function main() {
  const examples = int('FUZZ_EXAMPLES', 2000);
  const seed = int('FUZZ_SEED', randomInt(1, 2 ** 31));
  const workers = int('FUZZ_WORKERS', 2);
  // FUZZ_OPERATIONS: operationIds, comma-separated, to fuzz only those (a finding's operation again).
  const operations = (process.env.FUZZ_OPERATIONS ?? '').split(',').filter(Boolean);
  const reportDir = path.resolve(process.env.FUZZ_REPORT_DIR || path.join(ROOT, 'apps/gateway-e2e/test-output/fuzz'));
  const binary = findSchemathesis();
  if (!binary) throw new Error('schemathesis is missing: run `bash scripts/install-tools.sh` (or set SCHEMATHESIS)');
  for (const app of ['gateway', 'identity', 'policy', 'audit', 'export-worker']) {
    if (!fs.existsSync(path.join(ROOT, 'apps', app, 'dist/main.js'))) throw new Error(`apps/${app}/dist/main.js is missing: run \`npm run build\` first`);
  }

  // The fuzzer sends far more than any plan's budget with one key (enterprise) and, on the open routes, none.
  const { stack, stop } = await startBenchStack({ ...BENCH_LIMITS, RATE_LIMIT_ANONYMOUS_PER_MINUTE: '1000000' });
  let code = 1;
  try {
    const before = await serverErrors(stack.admin.gateway);
    const started = Date.now();
    const run = await runSchemathesis({ binary, baseUrl: stack.baseUrl, apiKey: KEY, maxExamples: examples, seed, workers, deterministic: false, reportDir, operations, onOutput: (chunk) => process.stdout.write(chunk) });
    const seconds = Math.round((Date.now() - started) / 1000);
    const fiveXx = (await serverErrors(stack.admin.gateway)) - before;
    console.log(`\n== fuzz summary\n${run.command}`);
    console.log(`seed ${seed}, ${examples} examples per operation, ${workers} workers, ${seconds} s, schemathesis exit code ${run.exitCode}`);
    console.log(fuzzSummary(run.report));
    console.log(`responses >= 500: ${fiveXx}`);
    console.log(`reports: ${reportDir} (JUnit XML: junit.xml, run report: report.json)`);
    code = run.exitCode === 0 && fiveXx === 0 && run.report?.test_cases.unique_failures === 0 ? 0 : 1;
  } finally {
    await stop();
  }
  process.exitCode = code;
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
