/**
 * deploy/k8s/rollout.sh against a recording stand-in for kubectl (no cluster here): the order of its steps,
 * the namespace it finds in the rendered overlay, and that a failed migrations Job stops the rollout before
 * any app changes.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describeWithTools, k8sDir, run, tools } from './support/tools';

function withFakeKubectl(waitExit: number, overlay: string) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'secsvc-rollout-'));
  const log = path.join(dir, 'calls');
  // `kubectl kustomize` renders for real; every other call is recorded (and `wait` answers waitExit).
  writeFileSync(
    path.join(dir, 'kubectl'),
    `#!/usr/bin/env bash
if [ "$1" = kustomize ]; then exec "${tools.kustomize}" build "$2"; fi
args="$*"
if [ "$1" = apply ]; then args="apply $(grep -c '^kind:' "$3") objects \${*:4}"; fi
echo "$args" >> "${log}"
case "$*" in *" wait "*) exit ${waitExit};; esac
exit 0
`,
  );
  chmodSync(path.join(dir, 'kubectl'), 0o755);
  try {
    const res = run('bash', ['-c', `PATH="${dir}:$PATH" "${path.join(k8sDir, 'rollout.sh')}" ${overlay} --context test 2>&1`]);
    let calls: string[] = [];
    try {
      calls = readFileSync(log, 'utf8').trim().split('\n');
    } catch {
      // No call recorded.
    }
    return { status: res.status, output: res.stdout, calls };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describeWithTools('rollout.sh', () => {
  it('applies the pre phase, waits for the migrations Job, then applies everything and waits for each Deployment', () => {
    const { status, calls, output } = withFakeKubectl(0, 'prod');
    expect(output).toContain('rolled out prod to secsvc');
    expect(status).toBe(0);
    const pre = calls[1]!.match(/^apply (\d+) objects -l secsvc.io\/rollout-phase=pre --context test$/);
    const all = calls[3]!.match(/^apply (\d+) objects --context test$/);
    expect(calls[0]).toBe('-n secsvc delete job secsvc-migrate --ignore-not-found --wait=true --context test');
    expect(pre).not.toBeNull();
    expect(calls[2]).toBe('-n secsvc wait --for=condition=complete job/secsvc-migrate --timeout=30m --context test');
    expect(all).not.toBeNull();
    expect(calls.slice(4)).toEqual(['gateway', 'identity', 'policy', 'audit', 'export-worker'].map((d) => `-n secsvc rollout status deployment/${d} --timeout=10m --context test`));
  });

  it('stops after a failed migrations Job, printing its logs, before the apps change', () => {
    const { status, calls, output } = withFakeKubectl(1, 'dev');
    expect(status).toBe(1);
    expect(output).toContain('the migrations Job did not complete');
    expect(calls.map((c) => c.split(' ').slice(0, 3).join(' '))).toEqual([
      '-n secsvc-dev delete',
      expect.stringMatching(/^apply \d+ objects$/),
      '-n secsvc-dev wait',
      '-n secsvc-dev logs',
    ]);
  });
});
