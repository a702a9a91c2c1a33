// Regenerates the TypeScript stubs and fails when they differ from what is committed (DESIGN.md rule 7).
const { execFileSync } = require('node:child_process');
const path = require('node:path');

const buf = path.join(__dirname, '../../node_modules/.bin/buf');
execFileSync(buf, ['lint'], { cwd: __dirname, stdio: 'inherit' });
execFileSync('npm', ['run', '--silent', 'gen'], { cwd: __dirname, stdio: 'inherit' });
const diff = execFileSync('git', ['status', '--porcelain', '--', 'src/gen', 'descriptors'], { cwd: __dirname, encoding: 'utf8' });
if (diff.trim()) {
  console.error('Generated code in libs/proto/src/gen or descriptors/ is out of date; run `npm run proto:gen` and commit:\n' + diff);
  process.exit(1);
}
console.log('libs/proto: generated code is up to date');
