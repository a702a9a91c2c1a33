/**
 * deploy/k8s/rollout.sh against a recording stand-in for kubectl (no cluster here): the order of its steps,
 * the namespace it finds in the rendered overlay, that a failed migrations Job stops the rollout before any
 * app changes, and the SAML SP Secret made once with openssl (real) when missing and never replaced.
 */
import { readSpKeys } from '../../../apps/gateway/src/sso/keys';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describeWithTools, k8sDir, run, tools } from './support/tools';

interface Rollout {
  status: number | null;
  output: string;
  /** kubectl calls after `kustomize`, in order (applies as "apply <n> objects ..."). */
  calls: string[];
  /** The files `create secret tls` was given, copied as the call ran (rollout.sh deletes its own). */
  created: { key?: string; cert?: string };
  /** What rollout.sh left in TMPDIR. */
  leftovers: string[];
}

function withFakeKubectl(waitExit: number, overlay: string, opts: { samlSecretExists?: boolean } = {}): Rollout {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'secsvc-rollout-'));
  const log = path.join(dir, 'calls');
  const tmp = path.join(dir, 'tmp');
  const created = path.join(dir, 'created');
  mkdirSync(tmp);
  mkdirSync(created);
  // `kubectl kustomize` renders for real; every other call is recorded (and `wait` answers waitExit, `get` of
  // the SAML SP Secret finds it or not, `create secret tls` keeps copies of its files).
  writeFileSync(
    path.join(dir, 'kubectl'),
    `#!/usr/bin/env bash
if [ "$1" = kustomize ]; then exec "${tools.kustomize}" build "$2"; fi
args="$*"
if [ "$1" = apply ]; then args="apply $(grep -c '^kind:' "$3") objects \${*:4}"; fi
echo "$args" >> "${log}"
case "$*" in *" wait "*) exit ${waitExit};; esac
case "$*" in *" get secret secsvc-saml-sp "*) ${opts.samlSecretExists ? 'echo secret/secsvc-saml-sp' : 'true'};; esac
case "$*" in *" create secret tls "*) for a in "$@"; do case "$a" in --cert=*) cp "\${a#*=}" "${created}/cert";; --key=*) cp "\${a#*=}" "${created}/key";; esac; done;; esac
exit 0
`,
  );
  chmodSync(path.join(dir, 'kubectl'), 0o755);
  try {
    const res = run('bash', ['-c', `TMPDIR="${tmp}" PATH="${dir}:$PATH" "${path.join(k8sDir, 'rollout.sh')}" ${overlay} --context test 2>&1`]);
    let calls: string[] = [];
    try {
      calls = readFileSync(log, 'utf8').trim().split('\n');
    } catch {
      // No call recorded.
    }
    const read = (name: string) => (existsSync(path.join(created, name)) ? readFileSync(path.join(created, name), 'utf8') : undefined);
    return { status: res.status, output: res.stdout, calls, created: { key: read('key'), cert: read('cert') }, leftovers: readdirSync(tmp) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const hasOpenssl = run('bash', ['-c', 'command -v openssl']).status === 0;
// skip reason: without openssl rollout.sh cannot make the SAML SP Secret on this machine; under CI=true it must exist
const withOpenssl = hasOpenssl || process.env.CI === 'true' ? it : it.skip;

describeWithTools('rollout.sh', () => {
  it('applies the pre phase, keeps an existing SAML SP Secret, waits for the migrations Job, then applies everything and waits for each Deployment', () => {
    const { status, calls, output, created } = withFakeKubectl(0, 'prod', { samlSecretExists: true });
    expect(output).toContain('rolled out prod to secsvc');
    expect(status).toBe(0);
    const pre = calls[1]!.match(/^apply (\d+) objects -l secsvc.io\/rollout-phase=pre --context test$/);
    const all = calls[4]!.match(/^apply (\d+) objects --context test$/);
    expect(calls[0]).toBe('-n secsvc delete job secsvc-migrate --ignore-not-found --wait=true --context test');
    expect(pre).not.toBeNull();
    expect(calls[2]).toBe('-n secsvc get secret secsvc-saml-sp --ignore-not-found -o name --context test');
    expect(calls[3]).toBe('-n secsvc wait --for=condition=complete job/secsvc-migrate --timeout=30m --context test');
    expect(all).not.toBeNull();
    expect(calls.slice(5)).toEqual(['gateway', 'identity', 'policy', 'audit', 'export-worker'].map((d) => `-n secsvc rollout status deployment/${d} --timeout=10m --context test`));
    // Never replaced: identity providers pinned its certificate.
    expect(calls.filter((c) => c.includes('secsvc-saml-sp') && !c.includes(' get '))).toEqual([]);
    expect(created).toEqual({ key: undefined, cert: undefined });
    expect(output).toContain('kept');
  });

  withOpenssl('creates the SAML SP Secret once when missing: a matching RSA 3072 pair, self-signed for 10 years, naming the public host, that the gateway accepts', () => {
    const { status, calls, output, created, leftovers } = withFakeKubectl(0, 'prod');
    expect(status).toBe(0);
    const create = calls.findIndex((c) => / create secret /.test(c));
    expect(calls[create]).toMatch(/^-n secsvc create secret tls secsvc-saml-sp --cert=\S+\/tls\.crt --key=\S+\/tls\.key --context test$/);
    // After the pre phase made the Namespace, before the apps.
    expect(calls[create - 1]).toBe('-n secsvc get secret secsvc-saml-sp --ignore-not-found -o name --context test');
    expect(create).toBeLessThan(calls.findIndex((c) => /^apply \d+ objects --context test$/.test(c)));
    expect(output).toContain('created (CN=api.secsvc.example.com)');

    const key = createPrivateKey(created.key!);
    expect([key.asymmetricKeyType, key.asymmetricKeyDetails?.modulusLength]).toEqual(['rsa', 3072]);
    const cert = new X509Certificate(created.cert!);
    expect(cert.checkPrivateKey(key)).toBe(true);
    expect(cert.subject).toBe('CN=api.secsvc.example.com');
    expect(cert.ca).toBe(false);
    expect(cert.verify(cert.publicKey)).toBe(true);
    const days = (Date.parse(cert.validTo) - Date.parse(cert.validFrom)) / 86_400_000;
    expect(Math.round(days)).toBe(3650);
    // The files the gateway reads from the mounted Secret, through its own loader.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'secsvc-saml-sp-'));
    try {
      writeFileSync(path.join(dir, 'tls.key'), created.key!);
      writeFileSync(path.join(dir, 'tls.crt'), created.cert!);
      expect(readSpKeys({ SAML_SP_KEY_FILE: path.join(dir, 'tls.key'), SAML_SP_CERT_FILE: path.join(dir, 'tls.crt') })).toEqual({ privateKey: created.key, certificate: created.cert });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // The private key does not outlive the script on the operator's machine, nor reach its output.
    expect(leftovers).toEqual([]);
    expect(output).not.toContain('PRIVATE KEY');
  });

  it('stops after a failed migrations Job, printing its logs, before the apps change', () => {
    const { status, calls, output } = withFakeKubectl(1, 'dev', { samlSecretExists: true });
    expect(status).toBe(1);
    expect(output).toContain('the migrations Job did not complete');
    expect(calls.map((c) => c.split(' ').slice(0, 3).join(' '))).toEqual([
      '-n secsvc-dev delete',
      expect.stringMatching(/^apply \d+ objects$/),
      '-n secsvc-dev get',
      '-n secsvc-dev wait',
      '-n secsvc-dev logs',
    ]);
  });
});
