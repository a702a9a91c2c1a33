// Regenerates openapi.json and src/schema.ts into a temporary directory and fails when they differ from the
// committed files (DESIGN.md rule 7), like libs/proto's check. Needs the gateway built (Nx builds it first).
const { execFileSync, spawnSync } = require('node:child_process');
const { existsSync, mkdtempSync, readFileSync, rmSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const FILES = ['openapi.json', 'src/schema.ts'];
const tmp = mkdtempSync(path.join(os.tmpdir(), 'secsvc-client-gen-'));
try {
  execFileSync(process.execPath, [path.join(__dirname, 'gen.js'), tmp], { cwd: __dirname, stdio: 'inherit' });
  const stale = FILES.filter((f) => {
    const committed = path.join(__dirname, f);
    return !existsSync(committed) || !readFileSync(committed).equals(readFileSync(path.join(tmp, f)));
  });
  if (stale.length) {
    for (const f of stale) {
      // git diff --no-index exits 1 when the files differ; its output is what matters.
      const diff = spawnSync('git', ['diff', '--no-index', '--stat', '--', path.join(__dirname, f), path.join(tmp, f)], { encoding: 'utf8' });
      const patch = spawnSync('git', ['diff', '--no-index', '--no-color', '-U1', '--', path.join(__dirname, f), path.join(tmp, f)], { encoding: 'utf8' });
      const lines = (patch.stdout || '').split('\n');
      console.error(`\n${f}: committed (a) vs regenerated (b)\n${diff.stdout}${lines.slice(0, 60).join('\n')}${lines.length > 60 ? `\n... (${lines.length - 60} more lines)` : ''}`);
    }
    console.error(
      `\nGenerated ${stale.join(' and ')} in libs/client ${stale.length > 1 ? 'are' : 'is'} out of date with the gateway's OpenAPI document; ` +
        'build the gateway (npx nx run @secsvc/gateway:build), run `npm run client:gen` and commit.',
    );
    process.exit(1);
  }
  console.log('libs/client: generated client is up to date');
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
