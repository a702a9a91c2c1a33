/**
 * The kustomize Component deploy/k8s/components/saml-sp-rollover, added to each overlay as an operator would:
 * it mounts the TLS Secret secsvc-saml-sp-rollover into the gateway exactly like the active pair (required,
 * read-only, 0400 with the fsGroup), sets SAML_SP_ROLLOVER_KEY_FILE/SAML_SP_ROLLOVER_CERT_FILE at the mounted
 * files, and changes nothing else; without it nothing refers to the rollover pair. The rendered paths, with real
 * pairs put there, are what the gateway's own key loader accepts (before and after the swap). kubeconform,
 * security.test.ts and config.test.ts also run over these renderings (support/tools.ts, RENDERINGS).
 */
import { readSpKeys } from '../../../apps/gateway/src/sso/keys';
import { ensureSamlSpKeyPair } from '@secsvc/dev/stack';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { COMPONENTS, describeWithTools, find, k8sDir, objects, OVERLAYS, type K8sObject } from './support/tools';

const COMPONENT = 'components/saml-sp-rollover';
const SECRET = 'secsvc-saml-sp-rollover';
const ROLLOVER_VARS = ['SAML_SP_ROLLOVER_KEY_FILE', 'SAML_SP_ROLLOVER_CERT_FILE'];

interface SecretVolume {
  name: string;
  secret?: { secretName: string; optional?: boolean; defaultMode?: number; items?: { key: string; path: string }[] };
}
interface Mount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
}
/* eslint-disable @typescript-eslint/no-explicit-any -- pod specs of rendered manifests are free-form */
const gatewayPod = (objs: K8sObject[]): any => find(objs, 'Deployment', 'gateway').spec.template.spec;
/* eslint-enable @typescript-eslint/no-explicit-any */
const volumeOf = (pod: { volumes: SecretVolume[] }, secretName: string) => pod.volumes.find((v) => v.secret?.secretName === secretName);

it('lists every component folder in COMPONENTS, so each is rendered, validated and checked', () => {
  expect(readdirSync(path.join(k8sDir, 'components')).sort()).toEqual([...COMPONENTS].sort());
});

for (const overlay of OVERLAYS) {
  describeWithTools(`overlays/${overlay} + ${COMPONENT}`, () => {
    const plain = () => objects(`overlays/${overlay}`);
    const withRollover = () => objects(`overlays/${overlay}+${COMPONENT}`);

    it(`mounts the TLS Secret ${SECRET} into the gateway like the active pair (required, read-only, 0400 with the fsGroup) and sets SAML_SP_ROLLOVER_* at its files`, () => {
      const pod = gatewayPod(withRollover());
      const c = pod.containers[0];
      const active = volumeOf(pod, 'secsvc-saml-sp')!;
      const rollover = volumeOf(pod, SECRET)!;
      expect(rollover.secret!.optional ?? false).toBe(false);
      expect(rollover.secret!.defaultMode).toBe(0o400);
      expect(rollover.secret!.items).toEqual([
        { key: 'tls.key', path: 'tls.key' },
        { key: 'tls.crt', path: 'tls.crt' },
      ]);
      // The same Secret volume as the active pair's in every other respect.
      expect({ ...rollover.secret, secretName: 'secsvc-saml-sp' }).toEqual(active.secret);

      const mounts = c.volumeMounts as Mount[];
      const mount = mounts.find((m) => m.name === rollover.name)!;
      const activeMount = mounts.find((m) => m.name === active.name)!;
      expect(mount.readOnly).toBe(true);
      // A folder of its own: neither inside the active pair's mount nor over it, nor over /tmp.
      for (const other of mounts.filter((m) => m !== mount)) {
        expect([other.mountPath, mount.mountPath.startsWith(`${other.mountPath}/`), other.mountPath.startsWith(`${mount.mountPath}/`), other.mountPath === mount.mountPath]).toEqual([
          other.mountPath,
          false,
          false,
          false,
        ]);
      }
      expect(path.dirname(mount.mountPath)).toBe(path.dirname(activeMount.mountPath));

      const env = (name: string) => (c.env as { name: string; value?: string }[]).filter((e) => e.name === name);
      expect([...env('SAML_SP_ROLLOVER_KEY_FILE'), ...env('SAML_SP_ROLLOVER_CERT_FILE')]).toEqual([
        { name: 'SAML_SP_ROLLOVER_KEY_FILE', value: `${mount.mountPath}/tls.key` },
        { name: 'SAML_SP_ROLLOVER_CERT_FILE', value: `${mount.mountPath}/tls.crt` },
      ]);
      // The pod's security settings are the base's: read-only root filesystem, fsGroup = the gateway's group.
      expect(c.securityContext.readOnlyRootFilesystem).toBe(true);
      expect(pod.securityContext.fsGroup).toBe(c.securityContext.runAsGroup);
      // No other workload sees the rollover key.
      const users = withRollover().filter((o) => JSON.stringify(o).includes(SECRET));
      expect(users.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(['Deployment/gateway']);
    });

    it('changes nothing but those two variables, the mount and the volume of the gateway', () => {
      const isGateway = (o: K8sObject) => o.kind === 'Deployment' && o.metadata.name === 'gateway';
      expect(withRollover().filter((o) => !isGateway(o))).toEqual(plain().filter((o) => !isGateway(o)));
      const gateway = structuredClone(find(withRollover(), 'Deployment', 'gateway'));
      const pod = gateway.spec.template.spec;
      const name = volumeOf(pod, SECRET)!.name;
      pod.volumes = (pod.volumes as SecretVolume[]).filter((v) => v.name !== name);
      pod.containers[0].volumeMounts = (pod.containers[0].volumeMounts as Mount[]).filter((m) => m.name !== name);
      pod.containers[0].env = (pod.containers[0].env as { name: string }[]).filter((e) => !ROLLOVER_VARS.includes(e.name));
      expect(gateway).toEqual(find(plain(), 'Deployment', 'gateway'));
    });

    it('is what the gateway loads: both pairs at the rendered paths, before and after the swap; the same pair twice is refused', async () => {
      const c = gatewayPod(withRollover()).containers[0];
      const vars = Object.fromEntries((c.env as { name: string; value?: string }[]).filter((e) => e.name.startsWith('SAML_SP_')).map((e) => [e.name, e.value!]));
      expect(Object.keys(vars).sort()).toEqual(['SAML_SP_CERT_FILE', 'SAML_SP_KEY_FILE', ...ROLLOVER_VARS].sort());
      const root = mkdtempSync(path.join(os.tmpdir(), 'secsvc-saml-rollover-'));
      try {
        const old = await ensureSamlSpKeyPair(path.join(root, 'old'), 'api.secsvc.example.com');
        const next = await ensureSamlSpKeyPair(path.join(root, 'new'), 'api.secsvc.example.com');
        const pem = (f: string) => readFileSync(f, 'utf8');
        const pairs = { old: { privateKey: pem(old.keyFile), certificate: pem(old.certFile) }, new: { privateKey: pem(next.keyFile), certificate: pem(next.certFile) } };
        // The files the kubelet projects from the two Secrets, under a stand-in for the container's root.
        const config = Object.fromEntries(Object.entries(vars).map(([k, v]) => [k, path.join(root, 'pod', v)]));
        const mountSecrets = (active: keyof typeof pairs, rollover: keyof typeof pairs) => {
          for (const [keyVar, certVar, pair] of [
            ['SAML_SP_KEY_FILE', 'SAML_SP_CERT_FILE', pairs[active]],
            ['SAML_SP_ROLLOVER_KEY_FILE', 'SAML_SP_ROLLOVER_CERT_FILE', pairs[rollover]],
          ] as const) {
            mkdirSync(path.dirname(config[keyVar]!), { recursive: true });
            writeFileSync(config[keyVar]!, pair.privateKey);
            writeFileSync(config[certVar]!, pair.certificate);
          }
        };
        // Step 1: the new pair as the rollover pair.
        mountSecrets('old', 'new');
        expect(readSpKeys(config)).toEqual({ ...pairs.old, rollover: pairs.new });
        // Step 2, the swap: the new pair active, the old one the rollover pair.
        mountSecrets('new', 'old');
        expect(readSpKeys(config)).toEqual({ ...pairs.new, rollover: pairs.old });
        // Between the two Secret replacements of the swap both hold one pair: a gateway starting then stops.
        mountSecrets('new', 'new');
        expect(() => readSpKeys(config)).toThrow(/SAML_SP_ROLLOVER_CERT_FILE: is the active certificate/);
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    });

    it('without the component nothing refers to the rollover Secret or sets SAML_SP_ROLLOVER_*', () => {
      for (const objs of [plain(), objects('base')]) {
        const text = JSON.stringify(objs);
        expect([text.includes('saml-sp-rollover'), text.includes('SAML_SP_ROLLOVER')]).toEqual([false, false]);
      }
      // ...while the active pair is mounted as always.
      expect(volumeOf(gatewayPod(plain()), 'secsvc-saml-sp')).toBeDefined();
    });
  });
}
