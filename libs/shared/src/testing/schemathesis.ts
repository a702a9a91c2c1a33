import { spawn } from 'node:child_process';
import path from 'node:path';
import { findTool } from './tools';

/** The schemathesis binary: $SCHEMATHESIS, else the one scripts/install-tools.sh links; missing under CI=true throws. */
export const findSchemathesis = (): string | undefined => findTool('schemathesis', 'SCHEMATHESIS', 'run scripts/install-tools.sh (it installs schemathesis into a cached virtualenv)');

/**
 * Operations never fuzzed: they would revoke or rotate the API key the fuzzer itself calls with (its id is in
 * GET /v1/api-keys, which the stateful phase follows).
 */
export const FUZZ_EXCLUDED_OPERATIONS = ['revokeApiKey', 'rotateApiKey'];

export interface FuzzOptions {
  binary: string;
  /** The public origin: the document is read from <origin>/v1/openapi.json. */
  origin: string;
  /** An admin API key with a rate limit far above the load (the fuzzer sends thousands of requests). */
  apiKey: string;
  /** Examples per operation and phase (the coverage phase adds its own cases). */
  maxExamples: number;
  seed: number;
  workers?: number;
  /** Called with each line of output as it comes (progress for long runs). */
  onLine?: (line: string) => void;
}

export interface FuzzResult {
  exitCode: number;
  output: string;
  /** From the summary: cases generated, failures found, and the count per check code (ST101: server error...). */
  cases: number;
  failures: number;
  byCheck: Record<string, number>;
  /** Failures whose response was a 5xx (each reported failure shows its response's status). */
  serverErrors: number;
}

/** The project's configuration of schemathesis (which checks may see a 400 for what reason). */
export const FUZZ_CONFIG = path.resolve(__dirname, '../../../../apps/gateway-e2e/fuzz/schemathesis.toml');

/** Runs schemathesis over the served document with every check, deterministically (fixed seed), and reads its summary. */
export function runSchemathesis(o: FuzzOptions): Promise<FuzzResult> {
  const args = [
    '--config-file',
    FUZZ_CONFIG,
    'run',
    `${o.origin.replace(/\/+$/, '')}/v1/openapi.json`,
    '-H',
    `Authorization: Bearer ${o.apiKey}`,
    '--checks',
    'all',
    '--max-examples',
    String(o.maxExamples),
    '--seed',
    String(o.seed),
    '--workers',
    String(o.workers ?? 1),
    '--request-timeout',
    '10',
    '--generation-database',
    'none',
    ...FUZZ_EXCLUDED_OPERATIONS.flatMap((id) => ['--exclude-operation-id', id]),
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(o.binary, args, { env: { ...process.env, NO_COLOR: '1', COLUMNS: '160', PYTHONUNBUFFERED: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let partial = '';
    const take = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      output += text;
      if (!o.onLine) return;
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) o.onLine(line);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('error', reject);
    child.on('close', (code) => resolve({ exitCode: code ?? -1, output, ...summaryOf(output) }));
  });
}

/** The counts of schemathesis's closing summary ("12992 generated, 4 found 4 unique failures", "❌ ST202 …: 3"). */
export function summaryOf(output: string): Omit<FuzzResult, 'exitCode' | 'output'> {
  const cases = Number(/(\d+) generated/.exec(output)?.[1] ?? 0);
  const failures = Number(/found (\d+) unique failures?/.exec(output)?.[1] ?? 0);
  const byCheck: Record<string, number> = {};
  for (const m of output.matchAll(/(ST\d{3}) [^:\n]+: (\d+)/g)) byCheck[m[1]!] = Number(m[2]);
  const serverErrors = [...output.matchAll(/^\[5\d\d\] /gm)].length;
  return { cases, failures, byCheck, serverErrors };
}
