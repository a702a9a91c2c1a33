#!/usr/bin/env node
// The package registry reachable from this project's machines does not serve some other platforms' optional
// binaries (for example @swc/core-darwin-arm64), so `npm install` leaves them out of package-lock.json and
// `npm ci` then refuses the lock file as out of sync. This adds each missing optional dependency as an entry
// restricted to its platform (os/cpu from its name), which npm ci skips on every other platform.
// Run after any `npm install` that changes the lock file: `npm run lock:complete`.
const fs = require('node:fs');
const path = require('node:path');

const file = path.join(__dirname, '..', 'package-lock.json');
const lock = JSON.parse(fs.readFileSync(file, 'utf8'));
const packages = lock.packages;

const OS = ['darwin', 'win32', 'linux', 'freebsd', 'android', 'openharmony', 'sunos', 'aix', 'netbsd', 'openbsd'];
const CPU = { arm64: 'arm64', x64: 'x64', ia32: 'ia32', arm: 'arm', armv7: 'arm', ppc64: 'ppc64', s390x: 's390x', riscv64: 'riscv64', loong64: 'loong64' };

function platformOf(name) {
  const parts = name.split('/').pop().split('-');
  const os = parts.find((p) => OS.includes(p));
  const cpu = parts.map((p) => CPU[p]).find(Boolean);
  return { ...(os ? { os: [os] } : {}), ...(cpu ? { cpu: [cpu] } : {}) };
}

function resolves(fromKey, name) {
  // Node resolution inside the lock: node_modules/a/node_modules/<name>, then up to the root.
  let base = fromKey;
  for (;;) {
    const candidate = (base ? `${base}/` : '') + `node_modules/${name}`;
    if (packages[candidate]) return true;
    if (!base) return false;
    const idx = base.lastIndexOf('node_modules/');
    base = idx <= 0 ? '' : base.slice(0, idx - 1);
  }
}

let added = 0;
for (const [key, pkg] of Object.entries(packages)) {
  for (const [name, version] of Object.entries(pkg.optionalDependencies ?? {})) {
    if (resolves(key, name)) continue;
    if (!/^\d+\.\d+\.\d+/.test(version)) continue; // only exact versions can be pinned safely
    packages[`node_modules/${name}`] = { version, optional: true, ...platformOf(name) };
    added++;
  }
}
const sorted = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))));
lock.packages = sorted;
fs.writeFileSync(file, JSON.stringify(lock, null, 2) + '\n');
console.log(`package-lock.json: added ${added} platform-only optional entries`);
