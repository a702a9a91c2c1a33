#!/usr/bin/env node
// Runs a TypeScript support script without a build: `node test/support/run-ts.js test/support/latency.ts [args]`.
// Compiles each .ts file on require with SWC, as Jest does (no type checking: that is `npm run typecheck`).
const fs = require('node:fs');
const path = require('node:path');
const { transformSync } = require('@swc/core');

require.extensions['.ts'] = (module, filename) => {
  const { code } = transformSync(fs.readFileSync(filename, 'utf8'), {
    filename,
    jsc: { target: 'es2022', parser: { syntax: 'typescript' } },
    module: { type: 'commonjs' },
    sourceMaps: 'inline',
  });
  module._compile(code, filename);
};

const script = process.argv[2];
if (!script) {
  console.error('usage: node test/support/run-ts.js <script.ts> [args...]');
  process.exit(2);
}
process.argv.splice(1, 1);
require(path.resolve(script));
