#!/usr/bin/env node
// `npm run chaos -- [--minutes 10] [--profile local|distributed|local,distributed]`: the chaos suite of
// apps/gateway-e2e/test/chaos.test.ts with a longer random phase (a random process killed every 10 s), after
// the kill of every process in turn. Run after `npm run build`. The result goes to .cache/chaos/<time>/ as
// JSON per profile and is summed up here (docs/operations.md, "Chaos", records one).
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] ? args[i + 1] : fallback;
};
const minutes = Number(option('minutes', '10'));
const profile = option('profile', 'local');
if (!(minutes > 0) || !/^(local|distributed)(,(local|distributed))?$/.test(profile)) {
  console.error('usage: npm run chaos -- [--minutes N] [--profile local|distributed|local,distributed]');
  process.exit(2);
}
const root = path.resolve(__dirname, '..');
const report = path.join(root, '.cache', 'chaos', new Date().toISOString().replace(/[:.]/g, '-'));
console.log(`chaos: ${profile} profile, every process in turn, then a random one every 10 s for ${minutes} min; report in ${report}`);
const run = spawnSync('npx', ['jest', '--runInBand', 'test/chaos.test.ts'], {
  cwd: path.join(root, 'apps', 'gateway-e2e'),
  stdio: 'inherit',
  env: { ...process.env, CHAOS_MINUTES: String(minutes), CHAOS_PROFILE: profile, CHAOS_REPORT: report },
});
for (const name of profile.split(',')) {
  const file = path.join(report, `${name}.json`);
  if (!fs.existsSync(file)) continue;
  const r = JSON.parse(fs.readFileSync(file, 'utf8'));
  const byVictim = {};
  for (const k of r.kills) (byVictim[k.victim] ??= []).push(k.recoveryMs);
  console.log(`\n${name}: ${r.kills.length} kills; recovery median ${r.recoveryMs.median} ms, max ${r.recoveryMs.max} ms`);
  for (const [victim, ms] of Object.entries(byVictim)) console.log(`  ${victim}: ${ms.length} kills, max ${Math.max(...ms)} ms`);
  if (r.findings) {
    const f = r.findings;
    console.log(`  acknowledged ${JSON.stringify(f.acknowledged)}; answers ${JSON.stringify(f.statuses)}`);
    console.log(`  lost ${f.lost.length}, audit missing ${f.auditMissing.length}, logged twice ${f.auditDuplicated.length}, exports not completed ${f.exportsNotCompleted.length}, bad answers ${f.badAnswers.length}`);
  }
}
process.exit(run.status ?? 1);
