/**
 * deploy/k8s/rollout.sh against a recording stand-in for kubectl (no cluster here): the order of its steps,
 * the namespace it finds in the rendered overlay, that a failed migrations Job stops the rollout before any
 * app changes, and the SAML SP Secret made once with openssl (real) when missing and never replaced; its
 * sub-command `saml-sp-rollover`, which makes the rollover Secret the same way, once; and that an overlay with
 * the saml-sp-rollover component stops before any change while that Secret is missing.
 */
import { readSpKeys } from '../../../apps/gateway/src/sso/keys';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describeWithTools, k8sDir, run, tools, withKustomization } from './support/tools';

interface Rollout {
  status: number | null;
  output: string;
  /** kubectl calls after `kustomize`, in order (applies as "apply <n> objects ..."). */
  calls: string[];
  /** The files `create secret tls <name>` was given, by name, copied as the call ran (rollout.sh deletes its own). */
  created: Record<string, { key: string; cert: string }>;
  /** What rollout.sh left in TMPDIR. */
  leftovers: string[];
}

/** Runs `rollout.sh <args> --context test`; `secrets`: the Secrets `get secret` finds. */
function withFakeKubectl(waitExit: number, args: string, opts: { secrets?: string[] } = {}): Rollout {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'secsvc-rollout-'));
  const log = path.join(dir, 'calls');
  const tmp = path.join(dir, 'tmp');
  const created = path.join(dir, 'created');
  mkdirSync(tmp);
  mkdirSync(created);
  // `kubectl kustomize` renders for real; every other call is recorded (and `wait` answers waitExit, `get
  // secret` finds the Secrets in opts.secrets, `create secret tls` keeps copies of its files by Secret name).
  writeFileSync(
    path.join(dir, 'kubectl'),
    `#!/usr/bin/env bash
if [ "$1" = kustomize ]; then exec "${tools.kustomize}" build "$2"; fi
args="$*"
if [ "$1" = apply ]; then args="apply $(grep -c '^kind:' "$3") objects \${*:4}"; fi
echo "$args" >> "${log}"
case "$*" in *" wait "*) exit ${waitExit};; esac
for s in ${(opts.secrets ?? []).join(' ')}; do case "$*" in *" get secret $s "*) echo "secret/$s";; esac; done
case "$*" in *" create secret tls "*) name="$6"; for a in "$@"; do case "$a" in --cert=*) cp "\${a#*=}" "${created}/$name.cert";; --key=*) cp "\${a#*=}" "${created}/$name.key";; esac; done;; esac
exit 0
`,
  );
  chmodSync(path.join(dir, 'kubectl'), 0o755);
  try {
    const res = run('bash', ['-c', `TMPDIR="${tmp}" PATH="${dir}:$PATH" "${path.join(k8sDir, 'rollout.sh')}" ${args} --context test 2>&1`]);
    let calls: string[] = [];
    try {
      calls = readFileSync(log, 'utf8').trim().split('\n');
    } catch {
      // No call recorded.
    }
    const files: Rollout['created'] = {};
    for (const f of readdirSync(created)) {
      const [name, ext] = [f.slice(0, f.lastIndexOf('.')), f.slice(f.lastIndexOf('.') + 1) as 'key' | 'cert'];
      files[name] = { ...files[name]!, [ext]: readFileSync(path.join(created, f), 'utf8') };
    }
    return { status: res.status, output: res.stdout, calls, created: files, leftovers: readdirSync(tmp) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const hasOpenssl = run('bash', ['-c', 'command -v openssl']).status === 0;
// skip reason: without openssl rollout.sh cannot make the SAML SP Secret on this machine; under CI=true it must exist
const withOpenssl = hasOpenssl || process.env.CI === 'true' ? it : it.skip;

/**
 * Checks a pair rollout.sh made: a matching RSA 3072 key and self-signed, non-CA certificate valid 10 years
 * naming the public host; returns it as the gateway reads it.
 */
function expectSpPair(pair: { key: string; cert: string } | undefined): { privateKey: string; certificate: string } {
  const key = createPrivateKey(pair!.key);
  expect([key.asymmetricKeyType, key.asymmetricKeyDetails?.modulusLength]).toEqual(['rsa', 3072]);
  const cert = new X509Certificate(pair!.cert);
  expect(cert.checkPrivateKey(key)).toBe(true);
  expect(cert.subject).toBe('CN=api.secsvc.example.com');
  expect(cert.ca).toBe(false);
  expect(cert.verify(cert.publicKey)).toBe(true);
  const days = (Date.parse(cert.validTo) - Date.parse(cert.validFrom)) / 86_400_000;
  expect(Math.round(days)).toBe(3650);
  return { privateKey: pair!.key, certificate: pair!.cert };
}

/** The gateway's own key loader over the given pairs, written as the Secrets' files. */
function loadAsGateway(active: { key: string; cert: string }, rollover?: { key: string; cert: string }) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'secsvc-saml-sp-'));
  try {
    const config: Record<string, string> = {};
    for (const [prefix, pair] of [['SAML_SP', active], ['SAML_SP_ROLLOVER', rollover]] as const) {
      if (!pair) continue;
      writeFileSync((config[`${prefix}_KEY_FILE`] = path.join(dir, `${prefix}.key`)), pair.key);
      writeFileSync((config[`${prefix}_CERT_FILE`] = path.join(dir, `${prefix}.crt`)), pair.cert);
    }
    return readSpKeys(config);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const GET_ACTIVE = '-n secsvc get secret secsvc-saml-sp --ignore-not-found -o name --context test';
const GET_ROLLOVER = '-n secsvc get secret secsvc-saml-sp-rollover --ignore-not-found -o name --context test';

describeWithTools('rollout.sh', () => {
  it('applies the pre phase, keeps an existing SAML SP Secret, waits for the migrations Job, then applies everything and waits for each Deployment', () => {
    const { status, calls, output, created } = withFakeKubectl(0, 'prod', { secrets: ['secsvc-saml-sp'] });
    expect(output).toContain('rolled out prod to secsvc');
    expect(status).toBe(0);
    const pre = calls[1]!.match(/^apply (\d+) objects -l secsvc.io\/rollout-phase=pre --context test$/);
    const all = calls[4]!.match(/^apply (\d+) objects --context test$/);
    expect(calls[0]).toBe('-n secsvc delete job secsvc-migrate --ignore-not-found --wait=true --context test');
    expect(pre).not.toBeNull();
    expect(calls[2]).toBe(GET_ACTIVE);
    expect(calls[3]).toBe('-n secsvc wait --for=condition=complete job/secsvc-migrate --timeout=30m --context test');
    expect(all).not.toBeNull();
    expect(calls.slice(5)).toEqual(['gateway', 'identity', 'policy', 'audit', 'export-worker'].map((d) => `-n secsvc rollout status deployment/${d} --timeout=10m --context test`));
    // Never replaced: identity providers pinned its certificate.
    expect(calls.filter((c) => c.includes('secsvc-saml-sp') && !c.includes(' get '))).toEqual([]);
    expect(created).toEqual({});
    expect(output).toContain('kept');
  });

  withOpenssl('creates the SAML SP Secret once when missing: a matching RSA 3072 pair, self-signed for 10 years, naming the public host, that the gateway accepts', () => {
    const { status, calls, output, created, leftovers } = withFakeKubectl(0, 'prod');
    expect(status).toBe(0);
    const create = calls.findIndex((c) => / create secret /.test(c));
    expect(calls[create]).toMatch(/^-n secsvc create secret tls secsvc-saml-sp --cert=\S+\/tls\.crt --key=\S+\/tls\.key --context test$/);
    // After the pre phase made the Namespace, before the apps.
    expect(calls[create - 1]).toBe(GET_ACTIVE);
    expect(create).toBeLessThan(calls.findIndex((c) => /^apply \d+ objects --context test$/.test(c)));
    expect(output).toContain('created (CN=api.secsvc.example.com; certificate ');
    expect(Object.keys(created)).toEqual(['secsvc-saml-sp']);
    const pair = expectSpPair(created['secsvc-saml-sp']);
    // The files the gateway reads from the mounted Secret, through its own loader.
    expect(loadAsGateway(created['secsvc-saml-sp']!)).toEqual(pair);
    // The private key does not outlive the script on the operator's machine, nor reach its output.
    expect(leftovers).toEqual([]);
    expect(output).not.toContain('PRIVATE KEY');
  });

  withOpenssl('saml-sp-rollover: makes the Secret secsvc-saml-sp-rollover once, a new pair the gateway accepts as the rollover pair next to the active one, and rolls nothing out', () => {
    const active = withFakeKubectl(0, 'prod').created['secsvc-saml-sp']!;
    const { status, calls, output, created, leftovers } = withFakeKubectl(0, 'saml-sp-rollover prod', { secrets: ['secsvc-saml-sp'] });
    expect(status).toBe(0);
    expect(calls.slice(0, 2)).toEqual([GET_ACTIVE, GET_ROLLOVER]);
    expect(calls[2]).toMatch(/^-n secsvc create secret tls secsvc-saml-sp-rollover --cert=\S+\/tls\.crt --key=\S+\/tls\.key --context test$/);
    // Nothing applied, waited for or deleted.
    expect(calls).toHaveLength(3);
    expect(Object.keys(created)).toEqual(['secsvc-saml-sp-rollover']);
    const rollover = expectSpPair(created['secsvc-saml-sp-rollover']);
    const fingerprint = new X509Certificate(rollover.certificate).fingerprint256;
    expect(output).toContain(`certificate sha256 Fingerprint=${fingerprint}`);
    expect(output).toContain('components/saml-sp-rollover');
    expect(loadAsGateway(active, created['secsvc-saml-sp-rollover'])).toEqual({ privateKey: active.key, certificate: active.cert, rollover });
    expect(leftovers).toEqual([]);
    expect(output).not.toContain('PRIVATE KEY');
  });

  it('saml-sp-rollover: never replaces an existing rollover Secret (after a swap it holds the previous pair) and needs the active one', () => {
    const existing = withFakeKubectl(0, 'saml-sp-rollover prod', { secrets: ['secsvc-saml-sp', 'secsvc-saml-sp-rollover'] });
    expect(existing.status).toBe(1);
    expect(existing.output).toContain('secsvc-saml-sp-rollover exists already and is never replaced');
    expect(existing.calls).toEqual([GET_ACTIVE, GET_ROLLOVER]);
    const noActive = withFakeKubectl(0, 'saml-sp-rollover prod');
    expect(noActive.status).toBe(1);
    expect(noActive.output).toContain('no Secret secsvc-saml-sp in secsvc');
    expect(noActive.calls).toEqual([GET_ACTIVE]);
    for (const r of [existing, noActive]) expect(r.created).toEqual({});
  });

  it('with the saml-sp-rollover component: stops before any change while secsvc-saml-sp-rollover is missing, rolls out as usual once it exists', () => {
    withKustomization('overlays/prod+components/saml-sp-rollover', (overlay) => {
      const missing = withFakeKubectl(0, overlay, { secrets: ['secsvc-saml-sp'] });
      expect(missing.status).toBe(1);
      expect(missing.output).toContain('make it first: rollout.sh saml-sp-rollover');
      expect(missing.calls).toEqual([GET_ROLLOVER]);
      const present = withFakeKubectl(0, overlay, { secrets: ['secsvc-saml-sp', 'secsvc-saml-sp-rollover'] });
      expect(present.status).toBe(0);
      expect(present.calls[0]).toBe(GET_ROLLOVER);
      expect(present.calls.slice(-5)).toEqual(['gateway', 'identity', 'policy', 'audit', 'export-worker'].map((d) => `-n secsvc rollout status deployment/${d} --timeout=10m --context test`));
      expect(present.created).toEqual({});
    });
    // Without the component the rollover Secret is not looked for.
    expect(withFakeKubectl(0, 'prod', { secrets: ['secsvc-saml-sp'] }).calls).not.toContain(GET_ROLLOVER);
  });

  it('stops after a failed migrations Job, printing its logs, before the apps change', () => {
    const { status, calls, output } = withFakeKubectl(1, 'dev', { secrets: ['secsvc-saml-sp'] });
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
