#!/usr/bin/env node
// The opa CLI for the policy program: finds the binary, compiles policy.rego to WebAssembly and runs its tests.
//   node apps/policy/rego/opa-tool.js build   rebuild apps/policy/rego/policy.wasm from policy.rego
//   node apps/policy/rego/opa-tool.js check   rebuild in a temp dir, fail if the committed policy.wasm differs
//   node apps/policy/rego/opa-tool.js test    opa test apps/policy/rego -v
// (npm scripts rego:build, rego:check, rego:test in apps/policy). The engine tests use the same functions.
//
// opa is looked up as: $OPA, else ${SECSVC_TOOLS_DIR:-~/.cache/secsvc/bin}/opa (scripts/install-tools.sh puts
// the pinned version there), else PATH.
//
// `opa build` is deterministic for a given opa version and source path: the module embeds the path it was
// given for locations, so the build always runs from the repository root on `apps/policy/rego/policy.rego`.
/* global Buffer -- Node's Buffer (the root ESLint config lists only the CommonJS globals) */
const { execFileSync, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const zlib = require('node:zlib');

const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');
const SOURCE = 'apps/policy/rego/policy.rego';
const REGO_DIR = 'apps/policy/rego';
// The module's entry points: the decision, and the decision with explanations (src/engine/engine.ts).
const ENTRYPOINTS = ['secsvc/authz/decision', 'secsvc/authz/explained'];
const WASM_FILE = path.join(__dirname, 'policy.wasm');

function isExecutable(file) {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** The opa binary to use, or null when there is none. An $OPA that is not an executable file is an error. */
function findOpa(env = process.env) {
  if (env.OPA) {
    if (!isExecutable(env.OPA)) throw new Error(`OPA=${env.OPA} is not an executable file`);
    return env.OPA;
  }
  const toolsDir = env.SECSVC_TOOLS_DIR || path.join(os.homedir(), '.cache', 'secsvc', 'bin');
  const cached = path.join(toolsDir, 'opa');
  if (isExecutable(cached)) return cached;
  for (const dir of (env.PATH || '').split(path.delimiter)) {
    if (dir && isExecutable(path.join(dir, 'opa'))) return path.join(dir, 'opa');
  }
  return null;
}

const MISSING = 'the opa CLI was not found ($OPA, ${SECSVC_TOOLS_DIR:-~/.cache/secsvc/bin}/opa, PATH): run scripts/install-tools.sh';

function opaVersion(opa) {
  const out = execFileSync(opa, ['version'], { encoding: 'utf8' });
  const match = /^Version:\s*(\S+)/m.exec(out);
  return match ? match[1] : 'unknown';
}

/** Reads one file out of a .tar.gz (ustar, as `opa build` writes it). */
function extractFromTarGz(tarGz, wanted) {
  const tar = zlib.gunzipSync(tarGz);
  let offset = 0;
  while (offset + 512 <= tar.length) {
    const header = tar.subarray(offset, offset + 512);
    if (header.every((b) => b === 0)) break;
    const field = (start, length) => header.subarray(start, start + length).toString('utf8').replace(/\0.*$/s, '');
    const prefix = field(345, 155);
    const name = (prefix ? `${prefix}/` : '') + field(0, 100);
    const size = parseInt(field(124, 12).trim() || '0', 8);
    const type = field(156, 1);
    const body = offset + 512;
    if ((type === '0' || type === '') && name.replace(/^\/+/, '') === wanted) return tar.subarray(body, body + size);
    offset = body + Math.ceil(size / 512) * 512;
  }
  throw new Error(`${wanted} not found in the bundle`);
}

/** Compiles policy.rego with `opa build -t wasm` in a temp dir and returns the module's bytes. */
function buildWasm(opa) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'secsvc-rego-'));
  try {
    const bundle = path.join(dir, 'bundle.tar.gz');
    const entrypoints = ENTRYPOINTS.flatMap((e) => ['-e', e]);
    execFileSync(opa, ['build', '-t', 'wasm', ...entrypoints, SOURCE, '-o', bundle], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return extractFromTarGz(fs.readFileSync(bundle), 'policy.wasm');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs `opa test` on the rego directory; returns the exit status and the combined output. */
function runOpaTest(opa, extraArgs = []) {
  const result = spawnSync(opa, ['test', REGO_DIR, ...extraArgs], { cwd: REPO_ROOT, encoding: 'utf8' });
  if (result.error) throw result.error;
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

function main(command) {
  const opa = findOpa();
  if (!opa) {
    console.error(MISSING);
    return 1;
  }
  switch (command) {
    case 'build': {
      fs.writeFileSync(WASM_FILE, buildWasm(opa));
      console.log(`wrote ${path.relative(REPO_ROOT, WASM_FILE)} (opa ${opaVersion(opa)})`);
      return 0;
    }
    case 'check': {
      const built = buildWasm(opa);
      const committed = fs.existsSync(WASM_FILE) ? fs.readFileSync(WASM_FILE) : Buffer.alloc(0);
      if (!built.equals(committed)) {
        console.error(
          `${path.relative(REPO_ROOT, WASM_FILE)} is stale: it differs from \`opa build\` of ${SOURCE} with opa ` +
            `${opaVersion(opa)} (the version pinned in scripts/install-tools.sh builds the committed one). ` +
            'Run `npm run rego:build -w @secsvc/policy` and commit the result.',
        );
        return 1;
      }
      console.log(`${path.relative(REPO_ROOT, WASM_FILE)} is up to date (opa ${opaVersion(opa)})`);
      return 0;
    }
    case 'test': {
      const { status, output } = runOpaTest(opa, ['-v']);
      process.stdout.write(output);
      return status ?? 1;
    }
    default:
      console.error('usage: opa-tool.js build|check|test');
      return 2;
  }
}

module.exports = { findOpa, opaVersion, buildWasm, runOpaTest, extractFromTarGz, MISSING, REPO_ROOT, WASM_FILE, ENTRYPOINTS };

if (require.main === module) process.exitCode = main(process.argv[2]);
