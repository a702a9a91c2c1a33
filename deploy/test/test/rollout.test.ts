/**
 * deploy/k8s/rollout.sh against a recording stand-in for kubectl (no cluster here): the order of its steps,
 * the namespace it finds in the rendered overlay, that a failed migrations Job stops the rollout before any
 * app changes, and the SAML SP Secret made once with openssl (real) when missing and never replaced; its
 * sub-command `saml-sp-rollover`, which makes the rollover Secret the same way, once; and that an overlay with
 * the saml-sp-rollover component stops before any change while that Secret is missing; and `saml-sp-swap`, which
 * exchanges the two Secrets' pairs (the stand-in keeps them as state and enforces resourceVersions like the API
 * server), restarts the gateway, refuses without effect on a bad start and puts things back when kubectl fails midway.
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
  created: Record<string, Pair>;
  /** What rollout.sh left in TMPDIR. */
  leftovers: string[];
  /** The TLS Secrets of opts.pairs as the run left them. */
  secrets: Record<string, Pair>;
}

type Pair = { key: string; cert: string };

interface FakeOptions {
  /** The Secrets `get secret --ignore-not-found -o name` finds (besides those of `pairs`). */
  secrets?: string[];
  /** TLS Secrets with data, at resourceVersion 100 (+1 per replace): `get -o jsonpath` reads and `replace` writes them. */
  pairs?: Record<string, Pair>;
  /** A Secret that changes (resourceVersion +1) right after rollout.sh read it, as if someone else replaced it. */
  modifiedAfterRead?: string;
  /** Bash patterns of recorded calls that fail (exit 1) after being recorded. */
  fail?: string[];
  /** Bash patterns of `replace` calls that take effect and then fail, as a kubectl cut off after sending. */
  failAfter?: string[];
  /**
   * Leave our images as the committed overlay names them (tags). By default the stand-in renders them pinned by
   * a digest, as they are once the release step (deploy/k8s/README.md, "Build the images") has run.
   */
  unpinned?: boolean;
}

/** What the release step does to our images, for the stand-in's renders. */
const PIN_OUR_IMAGES = `sed -E 's#^([ -]*image: secsvc/[a-z-]+:[^@[:space:]]+)$#\\1@sha256:${'ab'.repeat(32)}#'`;

/** Runs `rollout.sh <args> --context test` against the stand-in kubectl. */
function withFakeKubectl(waitExit: number, args: string, opts: FakeOptions = {}): Rollout {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'secsvc-rollout-'));
  const log = path.join(dir, 'calls');
  const tmp = path.join(dir, 'tmp');
  const created = path.join(dir, 'created');
  const state = path.join(dir, 'secrets');
  mkdirSync(tmp);
  mkdirSync(created);
  mkdirSync(state);
  for (const [name, pair] of Object.entries(opts.pairs ?? {})) {
    writeFileSync(path.join(state, `${name}.crt`), pair.cert);
    writeFileSync(path.join(state, `${name}.key`), pair.key);
    writeFileSync(path.join(state, `${name}.rv`), '100');
  }
  const known = [...(opts.secrets ?? []), ...Object.keys(opts.pairs ?? {})];
  const quote = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;
  // `kubectl kustomize` renders for real; every other call is recorded (and `wait` answers waitExit, `get
  // secret` finds the Secrets in opts.secrets, `create secret tls` keeps copies of its files by Secret name;
  // `replace -f` is recorded as "replace <name> rv=<resourceVersion or none> <file mode>/<its folder's mode>",
  // refused with a conflict when the resourceVersion is not the Secret's, and otherwise stores the data).
  writeFileSync(
    path.join(dir, 'kubectl'),
    `#!/usr/bin/env bash
if [ "$1" = kustomize ]; then "${tools.kustomize}" build "$2" | ${opts.unpinned ? 'cat' : PIN_OUR_IMAGES}; exit \${PIPESTATUS[0]}; fi
state="${state}"
args="$*"
if [ "$1" = apply ]; then args="apply $(grep -c '^kind:' "$3") objects \${*:4}"; fi
if [ "$1" = replace ]; then
  f="$3"
  name="$(awk '/^  name: / {print $2; exit}' "$f")"
  rv="$(sed -n 's/^  resourceVersion: "\\(.*\\)"$/\\1/p' "$f")"
  args="replace $name rv=\${rv:-none} $(stat -c %a "$f")/$(stat -c %a "$(dirname "$f")") \${*:4}"
fi
echo "$args" >> "${log}"
fails=(${(opts.fail ?? []).map(quote).join(' ')})
for p in "\${fails[@]}"; do case "$args" in $p) echo "error: injected failure" >&2; exit 1;; esac; done
case "$*" in *" wait "*) exit ${waitExit};; esac
case "$*" in *" get secret "*" -o jsonpath="*)
  n="$5"
  [ -f "$state/$n.rv" ] || { echo "Error from server (NotFound): secrets $n not found" >&2; exit 1; }
  case "$*" in *"{.metadata.resourceVersion}"*) ;; *) base64 -w0 < "$state/$n.crt"; exit 0;; esac
  printf '%s %s %s' "$(cat "$state/$n.rv")" "$(base64 -w0 < "$state/$n.crt")" "$(base64 -w0 < "$state/$n.key")"
  [ "$n" != ${quote(opts.modifiedAfterRead ?? '')} ] || echo $(( $(cat "$state/$n.rv") + 1 )) > "$state/$n.rv"
  exit 0;;
esac
if [ "$1" = replace ]; then
  [ -f "$state/$name.rv" ] || { echo "Error from server (NotFound): secrets $name not found" >&2; exit 1; }
  if [ -n "$rv" ] && [ "$rv" != "$(cat "$state/$name.rv")" ]; then echo "Error from server (Conflict): the object has been modified" >&2; exit 1; fi
  sed -n 's/^  tls.crt: //p' "$f" | base64 -d > "$state/$name.crt"
  sed -n 's/^  tls.key: //p' "$f" | base64 -d > "$state/$name.key"
  echo $(( $(cat "$state/$name.rv") + 1 )) > "$state/$name.rv"
  echo "secret/$name replaced"
  after=(${(opts.failAfter ?? []).map(quote).join(' ')})
  for p in "\${after[@]}"; do case "$args" in $p) echo "error: connection lost" >&2; exit 1;; esac; done
  exit 0
fi
for s in ${known.join(' ')}; do case "$*" in *" get secret $s "*) echo "secret/$s";; esac; done
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
    const secrets: Rollout['secrets'] = {};
    for (const name of Object.keys(opts.pairs ?? {})) {
      secrets[name] = { key: readFileSync(path.join(state, `${name}.key`), 'utf8'), cert: readFileSync(path.join(state, `${name}.crt`), 'utf8') };
    }
    return { status: res.status, output: res.stdout, calls, created: files, leftovers: readdirSync(tmp), secrets };
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

/** A matching RSA 2048 key and self-signed certificate made with openssl (fixtures for the swap). */
function makePair(cn: string): Pair {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'secsvc-pair-'));
  try {
    const res = run('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-sha256', '-days', '2', '-nodes', '-subj', `/CN=${cn}`, '-keyout', path.join(dir, 'k'), '-out', path.join(dir, 'c')]);
    if (res.status !== 0) throw new Error(`openssl failed: ${res.stderr}`);
    return { key: readFileSync(path.join(dir, 'k'), 'utf8'), cert: readFileSync(path.join(dir, 'c'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Any trace of the private keys: PEM armour, a line of a key's body, the start of a key's base64 (as a Secret stores it). */
function expectNoKeyMaterial(text: string, pairs: Pair[]): void {
  expect(text).not.toContain('PRIVATE KEY');
  for (const { key } of pairs) {
    expect(text).not.toContain(key.split('\n')[2]);
    expect(text).not.toContain(Buffer.from(key).toString('base64').slice(20, 80));
  }
}

const fingerprintOf = (pair: Pair) => `sha256 Fingerprint=${new X509Certificate(pair.cert).fingerprint256}`;

const GET_ACTIVE = '-n secsvc get secret secsvc-saml-sp --ignore-not-found -o name --context test';
const GET_ROLLOVER = '-n secsvc get secret secsvc-saml-sp-rollover --ignore-not-found -o name --context test';

describeWithTools('rollout.sh', () => {
  it('refuses, changing nothing, to roll out prod (secsvc.io/require-image-digests) with an image not pinned by digest; dev takes tags', () => {
    const { status, calls, output } = withFakeKubectl(0, 'prod', { secrets: ['secsvc-saml-sp'], unpinned: true });
    expect(status).toBe(1);
    expect(calls).toEqual([]);
    expect(output).toContain('rollout.sh: prod requires images pinned by digest; not pinned:');
    for (const app of ['gateway', 'identity', 'policy', 'audit', 'export-worker']) expect(output).toContain(`  secsvc/${app}:0.1.0\n`);
    // The third-party images of prod are pinned already.
    expect(output).not.toMatch(/redis|clickhouse/);
    expect(output).toContain('Nothing was changed.');
    const dev = withFakeKubectl(0, 'dev', { secrets: ['secsvc-saml-sp'], unpinned: true });
    expect([dev.status, dev.output]).toEqual([0, expect.stringContaining('rolled out dev to secsvc-dev')]);
  });

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

  describe('saml-sp-swap', () => {
    const WITH_COMPONENT = 'overlays/prod+components/saml-sp-rollover';
    const READ = (name: string) => `-n secsvc get secret ${name} -o jsonpath={.metadata.resourceVersion} {.data.tls\\.crt} {.data.tls\\.key} --context test`;
    const READ_CERT = '-n secsvc get secret secsvc-saml-sp-rollover -o jsonpath={.data.tls\\.crt} --context test';
    const RESTART = ['-n secsvc rollout restart deployment/gateway --context test', '-n secsvc rollout status deployment/gateway --timeout=10m --context test'];
    let current: Pair;
    let next: Pair;
    beforeAll(() => {
      if (!hasOpenssl) return; // the tests below are skipped then (withOpenssl)
      current = makePair('current.example.com');
      next = makePair('next.example.com');
    });
    const swap = (opts: FakeOptions) => withKustomization(WITH_COMPONENT, (overlay) => withFakeKubectl(0, `saml-sp-swap ${overlay}`, opts));

    withOpenssl('exchanges the two Secrets\' pairs (each replace conditional on the version read), prints both fingerprints, restarts the gateway and waits; no key in the output, the calls or TMPDIR', () => {
      const r = swap({ pairs: { 'secsvc-saml-sp': current, 'secsvc-saml-sp-rollover': next } });
      expect(r.status).toBe(0);
      expect(r.calls).toEqual([
        GET_ACTIVE,
        GET_ROLLOVER,
        READ('secsvc-saml-sp'),
        READ('secsvc-saml-sp-rollover'),
        // Written into a 0700 folder as 0600 files; each carries the resourceVersion it was read at.
        'replace secsvc-saml-sp rv=100 600/700 --context test',
        'replace secsvc-saml-sp-rollover rv=100 600/700 --context test',
        ...RESTART,
      ]);
      expect(r.secrets).toEqual({ 'secsvc-saml-sp': next, 'secsvc-saml-sp-rollover': current });
      // What the restarted gateway reads from the swapped Secrets, through its own loader.
      expect(loadAsGateway(r.secrets['secsvc-saml-sp']!, r.secrets['secsvc-saml-sp-rollover'])).toEqual({ privateKey: next.key, certificate: next.cert, rollover: { privateKey: current.key, certificate: current.cert } });
      expect(r.output).toContain(`active   secsvc-saml-sp          certificate ${fingerprintOf(next)}`);
      expect(r.output).toContain(`rollover secsvc-saml-sp-rollover certificate ${fingerprintOf(current)}`);
      expectNoKeyMaterial(r.output + r.calls.join('\n'), [current, next]);
      expect(r.leftovers).toEqual([]);
    });

    withOpenssl('refuses, replacing nothing and restarting nothing: a Secret missing, the same certificate in both, a key not matching its certificate, an overlay without the component', () => {
      const missing = swap({ pairs: { 'secsvc-saml-sp': current } });
      expect(missing.output).toContain('no Secret secsvc-saml-sp-rollover in secsvc');
      expect(missing.calls).toEqual([GET_ACTIVE, GET_ROLLOVER]);
      const noActive = swap({ pairs: { 'secsvc-saml-sp-rollover': next } });
      expect(noActive.output).toContain('no Secret secsvc-saml-sp in secsvc');
      expect(noActive.calls).toEqual([GET_ACTIVE]);
      const same = swap({ pairs: { 'secsvc-saml-sp': current, 'secsvc-saml-sp-rollover': current } });
      expect(same.output).toContain(`hold the same certificate (${fingerprintOf(current)}); nothing to swap`);
      const mismatched = swap({ pairs: { 'secsvc-saml-sp': current, 'secsvc-saml-sp-rollover': { key: current.key, cert: next.cert } } });
      expect(mismatched.output).toContain('the Secret secsvc-saml-sp-rollover does not hold a PEM certificate and the private key matching it');
      for (const r of [same, mismatched]) expect(r.calls).toEqual([GET_ACTIVE, GET_ROLLOVER, READ('secsvc-saml-sp'), READ('secsvc-saml-sp-rollover')]);
      const noComponent = withFakeKubectl(0, 'saml-sp-swap prod', { pairs: { 'secsvc-saml-sp': current, 'secsvc-saml-sp-rollover': next } });
      expect(noComponent.output).toContain('the overlay does not mount secsvc-saml-sp-rollover');
      expect(noComponent.calls).toEqual([]);
      for (const r of [missing, noActive, same, mismatched, noComponent]) {
        expect(r.status).toBe(1);
        expect(r.output).toMatch(/nothing was changed/i);
        expect(r.leftovers).toEqual([]);
        expectNoKeyMaterial(r.output, [current, next]);
      }
      expect(same.secrets).toEqual({ 'secsvc-saml-sp': current, 'secsvc-saml-sp-rollover': current });
      expect(noComponent.secrets).toEqual({ 'secsvc-saml-sp': current, 'secsvc-saml-sp-rollover': next });
    });

    withOpenssl('kubectl failing midway: the replaced active Secret is put back unless the rollover one was replaced after all (both as before, no restart); if that fails too, or the state cannot be read, says so; TMPDIR empty either way', () => {
      const pairs = { 'secsvc-saml-sp': current, 'secsvc-saml-sp-rollover': next };
      // Someone replaced the rollover Secret after it was read: its replace conflicts, after the active one's succeeded.
      const conflict = swap({ pairs, modifiedAfterRead: 'secsvc-saml-sp-rollover' });
      expect(conflict.calls.slice(4)).toEqual(['replace secsvc-saml-sp rv=100 600/700 --context test', 'replace secsvc-saml-sp-rollover rv=100 600/700 --context test', READ_CERT, 'replace secsvc-saml-sp rv=none 600/700 --context test']);
      expect(conflict.output).toContain('Conflict');
      expect(conflict.output).toContain('restored: both Secrets hold their pairs as before');
      expect(conflict.secrets).toEqual(pairs);
      // The first replace conflicts: nothing was changed, nothing to restore.
      const first = swap({ pairs, modifiedAfterRead: 'secsvc-saml-sp' });
      expect(first.calls.slice(4)).toEqual(['replace secsvc-saml-sp rv=100 600/700 --context test']);
      expect(first.secrets).toEqual(pairs);
      // The restore fails too (the cluster went away): both hold the new pair.
      const lost = swap({ pairs, fail: ['replace secsvc-saml-sp-rollover *', 'replace secsvc-saml-sp rv=none *'] });
      expect(lost.calls.slice(-2)).toEqual([READ_CERT, 'replace secsvc-saml-sp rv=none 600/700 --context test']);
      expect(lost.output).toContain('the restore failed too: both Secrets now hold the new pair and the previous one is lost');
      expect(lost.secrets).toEqual({ 'secsvc-saml-sp': next, 'secsvc-saml-sp-rollover': next });
      // kubectl reports a failure but the rollover Secret was replaced: swapped, nothing put back.
      const through = swap({ pairs, failAfter: ['replace secsvc-saml-sp-rollover *'] });
      expect(through.calls.slice(-1)).toEqual([READ_CERT]);
      expect(through.output).toContain(`was replaced after all: the Secrets are swapped (active ${fingerprintOf(next)}), but the gateway was not restarted`);
      expect(through.secrets).toEqual({ 'secsvc-saml-sp': next, 'secsvc-saml-sp-rollover': current });
      // Nor when it cannot tell (the cluster unreachable): says what the two possible states are.
      const unknown = swap({ pairs, fail: ['replace secsvc-saml-sp-rollover *', READ_CERT.replace(/[\\*?[]/g, '\\$&')] });
      expect(unknown.calls.slice(-1)).toEqual([READ_CERT]);
      expect(unknown.output).toContain('cannot read secsvc-saml-sp-rollover any more: either the Secrets are swapped or both hold the new pair');
      for (const r of [conflict, first, lost, through, unknown]) {
        expect(r.status).not.toBe(0);
        expect(r.calls.filter((c) => c.includes(' rollout '))).toEqual([]);
        expect(r.leftovers).toEqual([]);
        expectNoKeyMaterial(r.output, [current, next]);
      }
      // The Secrets swapped, the restart not finished: said so, no restore.
      const restart = swap({ pairs, fail: ['-n secsvc rollout status *'] });
      expect(restart.status).toBe(1);
      expect(restart.calls.slice(-2)).toEqual(RESTART);
      expect(restart.output).toContain('the Secrets are swapped, but the gateway\'s restart did not finish');
      expect(restart.secrets).toEqual({ 'secsvc-saml-sp': next, 'secsvc-saml-sp-rollover': current });
      expect(restart.leftovers).toEqual([]);
    });
  });
});
