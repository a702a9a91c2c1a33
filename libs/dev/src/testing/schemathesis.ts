import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { findTool } from './tools';

// schemathesis (PyPI) over the served OpenAPI document: the one way the contract fuzz runs, for the CI test
// (apps/gateway-e2e/test/fuzz.test.ts) and the long run (`npm run fuzz`, scripts/fuzz.js).

/** The schemathesis binary: $SCHEMATHESIS, else the link scripts/install-tools.sh makes, else PATH; missing under CI=true throws. */
export const findSchemathesis = (): string | undefined =>
  findTool('schemathesis', 'SCHEMATHESIS', 'run scripts/install-tools.sh (it installs schemathesis into a cached virtualenv)');

/**
 * Never fuzzed: revokeApiKey (DELETE /v1/api-keys/{id}) and rotateApiKey would revoke or rotate the key the fuzzer
 * itself calls with (its id is listed by GET /v1/api-keys, which the stateful phase follows into them): every later
 * request would be a 401. No other operation can end that key (it belongs to no user).
 */
export const FUZZ_EXCLUDED_OPERATIONS = ['revokeApiKey', 'rotateApiKey'];

/** The project's configuration: which check may meet a 400 on which operation, and why. */
export const FUZZ_CONFIG = path.resolve(__dirname, '../../../../apps/gateway-e2e/fuzz/schemathesis.toml');

export interface FuzzOptions {
  binary: string;
  /** The API's base URL (…/v1): the document is <baseUrl>/openapi.json. */
  baseUrl: string;
  /** An admin API key whose rate limit is far above the load. */
  apiKey: string;
  /** Examples per operation and phase (the coverage phase adds its own boundary cases). */
  maxExamples: number;
  seed: number;
  workers: number;
  /** The same cases on every run (no example database either). */
  deterministic: boolean;
  /** Where report.json and junit.xml go (default: a temporary directory, removed afterwards). */
  reportDir?: string;
  /** Each chunk of schemathesis's console output as it comes (default: collected only). */
  onOutput?: (chunk: string) => void;
  /** Only these operations (operationId), e.g. to run a finding's operation again (default: all but the excluded). */
  operations?: string[];
}

/** schemathesis's JSON run report, as far as it is read here. */
export interface FuzzReport {
  exit_code: number;
  operations: { selected: number; tested: number } | null;
  test_cases: { generated: number; with_failures: number; unique_failures: number; errored: number };
  failures: { code: string; title: string; count: number; operations: string[] }[];
  errors: { title: string; count: number }[];
}

export interface FuzzResult {
  exitCode: number;
  output: string;
  /** Absent when schemathesis stopped before writing it. */
  report?: FuzzReport;
  /** Each failing or erroring operation with schemathesis's text: the checks, the response, a curl that reproduces it. */
  failures: string[];
  /** The command line, with the key hidden. */
  command: string;
}

const xmlText = (s: string) =>
  s.replace(/&(lt|gt|quot|apos|amp|#x?[0-9a-fA-F]+);/g, (_, e: string) =>
    e === 'lt' ? '<' : e === 'gt' ? '>' : e === 'quot' ? '"' : e === 'apos' ? "'" : e === 'amp' ? '&' : String.fromCodePoint(e.startsWith('#x') ? parseInt(e.slice(2), 16) : Number(e.slice(1))),
  );

/** Each failing or erroring test case of a JUnit XML report, with its text. */
export function junitFailures(xml: string): string[] {
  const out: string[] = [];
  for (const tc of xml.matchAll(/<testcase\b([^>]*?)(?:\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const name = xmlText(/\bname="([^"]*)"/.exec(tc[1]!)?.[1] ?? '?');
    for (const f of (tc[2] ?? '').matchAll(/<(failure|error)\b([^>]*?)(?:\/>|>([\s\S]*?)<\/\1>)/g)) {
      const message = xmlText(/\bmessage="([^"]*)"/.exec(f[2]!)?.[1] ?? '');
      out.push(`### ${name} (${f[1]}${message ? `: ${message}` : ''})\n${xmlText(f[3] ?? '').trim()}`);
    }
  }
  return out;
}

/** One line per fact of a run: cases, failures by check, errors. */
export function fuzzSummary(report: FuzzReport | undefined): string {
  if (!report) return 'no JSON report: schemathesis did not finish';
  const t = report.test_cases;
  return [
    `operations: ${report.operations?.tested ?? '?'} tested of ${report.operations?.selected ?? '?'} selected`,
    `cases run: ${t.generated} (${t.with_failures} with failures, ${t.unique_failures} unique failures, ${t.errored} errored)`,
    `failures by check: ${report.failures.map((f) => `${f.code} ${f.title}: ${f.count} (${f.operations.join(', ')})`).join('; ') || 'none'}`,
    ...(report.errors.length ? [`errors: ${report.errors.map((e) => `${e.title}: ${e.count}`).join('; ')}`] : []),
  ].join('\n');
}

/**
 * Runs schemathesis over the served document with every check (--checks all) and reads its reports. The working
 * directory is a fresh temporary one: schemathesis keeps a crash cache (.schemathesis/) there and would replay it
 * first next time, making runs depend on earlier ones.
 */
export async function runSchemathesis(o: FuzzOptions): Promise<FuzzResult> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'secsvc-fuzz-'));
  const reportDir = o.reportDir ?? tmp;
  mkdirSync(reportDir, { recursive: true });
  const json = path.join(reportDir, 'report.json');
  const junit = path.join(reportDir, 'junit.xml');
  for (const f of [json, junit]) rmSync(f, { force: true });
  const header = `Authorization: Bearer ${o.apiKey}`;
  const args = [
    '--config-file',
    FUZZ_CONFIG,
    'run',
    `${o.baseUrl.replace(/\/+$/, '')}/openapi.json`,
    '--header',
    header,
    '--checks',
    'all',
    '--seed',
    String(o.seed),
    // Deterministic generation implies no example database; otherwise the database is off too, so a run never
    // depends on the ones before it.
    ...(o.deterministic ? ['--generation-deterministic'] : ['--generation-database', 'none']),
    '--max-examples',
    String(o.maxExamples),
    '--workers',
    String(o.workers),
    '--request-timeout',
    '10',
    // Health checks judge the generator (slow or heavily filtered data), not the server: a busy machine must not
    // turn them into errors.
    '--suppress-health-check',
    'all',
    '--report-junit-path',
    junit,
    '--report-json-path',
    json,
    '--no-color',
    ...FUZZ_EXCLUDED_OPERATIONS.flatMap((id) => ['--exclude-operation-id', id]),
    ...(o.operations ?? []).flatMap((id) => ['--include-operation-id', id]),
  ];
  const command = ['schemathesis', ...args].map((a) => (a === header ? "'Authorization: Bearer <key>'" : a)).join(' ');
  try {
    const { exitCode, output } = await new Promise<{ exitCode: number; output: string }>((resolve, reject) => {
      const child = spawn(o.binary, args, { cwd: tmp, env: { ...process.env, PYTHONUNBUFFERED: '1', NO_COLOR: '1', COLUMNS: '160' }, stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      const take = (chunk: Buffer) => {
        const s = chunk.toString('utf8');
        text += s;
        o.onOutput?.(s);
      };
      child.stdout.on('data', take);
      child.stderr.on('data', take);
      child.on('error', reject);
      child.on('close', (code, signal) => resolve({ exitCode: code ?? (signal ? 128 : 1), output: text }));
    });
    const report = existsSync(json) ? (JSON.parse(readFileSync(json, 'utf8')) as FuzzReport) : undefined;
    const failures = existsSync(junit) ? junitFailures(readFileSync(junit, 'utf8')) : [];
    return { exitCode, output, report, failures, command };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
