// The opa CLI for tests: the same lookup as `npm run rego:*` ($OPA, the tools cache, PATH; see rego/opa-tool.js).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MISSING, REPO_ROOT, findOpa } from '../../rego/opa-tool';

export const opa = findOpa();

/**
 * `describe` for suites that need the opa CLI. Without it: under CI=true (read, never set, here) the suite is
 * one failing test, because CI must not pass on a missing dependency; elsewhere the suite is skipped, and its
 * name says why and how to get opa (scripts/install-tools.sh), so the skip shows in Jest's output.
 */
export function describeWithOpa(name: string, body: (opaPath: string) => void): void {
  if (opa) {
    describe(name, () => body(opa));
  } else if (process.env.CI === 'true') {
    describe(name, () => {
      test('the opa CLI is available', () => {
        throw new Error(`${MISSING} (CI=true: a missing dependency fails the suite)`);
      });
    });
  } else {
    // Skipped, not failed: outside CI a developer may not have run scripts/install-tools.sh yet. Said on
    // stderr as well, since Jest's default reporter only counts skipped tests.
    process.stderr.write(`SKIPPED "${name}": ${MISSING}\n`);
    describe.skip(`${name} [skipped: ${MISSING}]`, () => body('')); // skip reason: the opa CLI is not installed and CI is not set (under CI=true the suite fails instead)
  }
}

/**
 * `opa eval --format json` of one query over the given Rego files, with `input` written to a temp file.
 * Returns the value of the query's single expression.
 */
export function opaEval(opaPath: string, files: readonly string[], query: string, input: unknown): unknown {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'secsvc-opa-eval-'));
  try {
    const inputFile = path.join(dir, 'input.json');
    fs.writeFileSync(inputFile, JSON.stringify(input));
    const args = ['eval', '--format', 'json', '--input', inputFile, ...files.flatMap((f) => ['--data', f]), query];
    const out = execFileSync(opaPath, args, { cwd: REPO_ROOT, encoding: 'utf8', maxBuffer: 512 * 2 ** 20 });
    const parsed = JSON.parse(out) as { result?: Array<{ expressions: Array<{ value: unknown }> }> };
    const value = parsed.result?.[0]?.expressions[0]?.value;
    if (value === undefined) throw new Error(`opa eval ${query}: undefined (output: ${out.slice(0, 500)})`);
    return value;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
