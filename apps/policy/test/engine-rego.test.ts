// The Rego program itself through the opa CLI: its unit tests pass, and the committed module is what
// `opa build` makes of it now (the same check as `npm run rego:check`).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadEngine } from '../src/engine';
import { WASM_FILE, buildWasm, extractFromTarGz, findOpa, opaVersion, runOpaTest } from '../rego/opa-tool';
import { describeWithOpa } from './support/opa';

describeWithOpa('the Rego program', (opa) => {
  test('opa test apps/policy/rego passes, with every test reported', () => {
    const { status, output } = runOpaTest(opa, ['-v']);
    expect(output).not.toMatch(/\bFAIL\b/);
    expect(status).toBe(0);
    // The unit tests exist and ran (a rename that drops a file would otherwise pass silently).
    const passed = Number(/PASS: (\d+)\/(\d+)/.exec(output)?.[1] ?? 0);
    expect(passed).toBeGreaterThanOrEqual(40);
  });

  test('the committed policy.wasm is the build of policy.rego (npm run rego:build to refresh it)', () => {
    const built = buildWasm(opa);
    const committed = fs.readFileSync(WASM_FILE);
    // Byte comparison: `opa build` is deterministic for one opa version and source path (rego/opa-tool.js).
    const state = built.equals(committed) ? 'up to date' : `stale for opa ${opaVersion(opa)}: run npm run rego:build -w @secsvc/policy`;
    expect(state).toBe('up to date');
  });

  test('a module built with another entry point is refused by loadEngine', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'secsvc-engine-'));
    try {
      fs.writeFileSync(path.join(dir, 'other.rego'), 'package other\n\nallow := true\n');
      execFileSync(opa, ['build', '-t', 'wasm', '-e', 'other/allow', 'other.rego', '-o', 'bundle.tar.gz'], { cwd: dir });
      const wasmPath = path.join(dir, 'other.wasm');
      fs.writeFileSync(wasmPath, extractFromTarGz(fs.readFileSync(path.join(dir, 'bundle.tar.gz')), 'policy.wasm'));
      await expect(loadEngine({ wasmPath })).rejects.toThrow('the policy module has no entry point secsvc/authz/decision');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('finding the opa binary', () => {
  // Environments are passed as objects; process.env is never touched.
  let dir: string;
  let fake: (sub: string) => string;

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'secsvc-findopa-'));
    fake = (sub) => {
      fs.mkdirSync(path.join(dir, sub), { recursive: true });
      const file = path.join(dir, sub, 'opa');
      fs.writeFileSync(file, '#!/bin/sh\n', { mode: 0o755 });
      return file;
    };
  });

  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('$OPA first, then the tools dir, then PATH; null when none has it', () => {
    const explicit = fake('explicit');
    const tools = fake('tools');
    const onPath = fake('path');
    const toolsDir = path.dirname(tools);
    expect(findOpa({ OPA: explicit, SECSVC_TOOLS_DIR: toolsDir, PATH: path.dirname(onPath) })).toBe(explicit);
    expect(findOpa({ SECSVC_TOOLS_DIR: toolsDir, PATH: path.dirname(onPath) })).toBe(tools);
    expect(findOpa({ SECSVC_TOOLS_DIR: path.join(dir, 'none'), PATH: `${path.join(dir, 'none')}:${path.dirname(onPath)}` })).toBe(onPath);
    expect(findOpa({ SECSVC_TOOLS_DIR: path.join(dir, 'none'), PATH: path.join(dir, 'none') })).toBeNull();
  });

  test('an $OPA that is not an executable file is an error, not a silent fallback', () => {
    expect(() => findOpa({ OPA: path.join(dir, 'missing-opa') })).toThrow('is not an executable file');
  });
});
