/**
 * The rendered environment of every container is accepted by that app's own configuration loader (the code
 * each process runs at start), and every variable the manifests set is one some app reads: a typo or a
 * half-configured distributed profile fails here instead of in a crash-looping pod.
 */
import { auditConfigShape, loadAuditConfig } from '../../../apps/audit/src/config';
import { loadWorkerConfig, workerConfigShape } from '../../../apps/export-worker/src/config';
import { gatewayConfigShape, loadGatewayConfig } from '../../../apps/gateway/src/config';
import { identityConfigShape, loadIdentityConfig } from '../../../apps/identity/src/config';
import { loadPolicyConfig, policyConfigShape } from '../../../apps/policy/src/config';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { AUDIT_CONSUMER_GROUP, AUTH_EVENTS_TOPIC } from '@secsvc/shared';
import path from 'node:path';
import { describeWithTools, find, k8sDir, objects, RENDERINGS, run, type K8sObject } from './support/tools';

const apps: Record<string, { shape: object; load: (env: Record<string, string>) => unknown }> = {
  gateway: { shape: gatewayConfigShape, load: loadGatewayConfig },
  identity: { shape: identityConfigShape, load: loadIdentityConfig },
  policy: { shape: policyConfigShape, load: loadPolicyConfig },
  audit: { shape: auditConfigShape, load: loadAuditConfig },
  'export-worker': { shape: workerConfigShape, load: loadWorkerConfig },
};

/** Variables read by Node.js itself rather than by our configuration. */
const RUNTIME_VARIABLES = new Set(['NODE_EXTRA_CA_CERTS']);

/** Stand-ins for the values of the Secrets the manifests reference (by Secret and key). */
const SECRET_VALUES: Record<string, string> = {
  'secsvc-pg-app/uri': 'postgresql://secsvc:pw@secsvc-pg-rw:5432/secsvc',
  'secsvc-secrets/SERVER_SECRET': 's'.repeat(48),
  'secsvc-secrets/REDIS_URL': 'redis://:pw@redis:6379/0',
  'secsvc-secrets/CLICKHOUSE_PASSWORD': 'pw',
  'secsvc-app/password': 'pw',
};

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
}

/**
 * Stand-ins for the files of the cert-manager Secrets (<name>-tls: tls.crt, tls.key, ca.crt): an ECDSA CA and a
 * certificate it signed, made with openssl, since the loaders read and check the files GRPC_TLS_* and
 * CLICKHOUSE_CA_FILE name.
 */
let tlsDir = '';
beforeAll(() => {
  tlsDir = mkdtempSync(path.join(os.tmpdir(), 'secsvc-config-tls-'));
  const f = (n: string) => path.join(tlsDir, n);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  for (const args of [
    ['req', '-x509', ...ec, '-days', '2', '-subj', '/CN=test CA', '-keyout', f('ca.key'), '-out', f('ca.crt')],
    ['req', ...ec, '-subj', '/CN=identity-headless', '-keyout', f('tls.key'), '-out', f('tls.csr')],
    ['x509', '-req', '-in', f('tls.csr'), '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-CAcreateserial', '-days', '2', '-out', f('tls.crt')],
  ]) {
    const res = run('openssl', args);
    if (res.status !== 0) throw new Error(`openssl ${args[0]}: ${res.stderr}`);
  }
});
afterAll(() => rmSync(tlsDir, { recursive: true, force: true }));

/* eslint-disable @typescript-eslint/no-explicit-any -- pod specs of rendered manifests are free-form */
/**
 * A *_FILE variable naming a file of a mounted cert-manager Secret, as the path of its stand-in; it must be an
 * item of a Secret volume the container mounts (else the process would not find it).
 */
function standInFile(objs: K8sObject[], container: any, name: string, value: string): string {
  if (!name.endsWith('_FILE')) return value;
  const pod = objs.map((o) => o.spec?.template?.spec).find((p) => p && [...(p.containers ?? []), ...(p.initContainers ?? [])].includes(container));
  const mount = (container.volumeMounts ?? []).find((m: any) => value.startsWith(`${m.mountPath}/`));
  const secret = pod?.volumes?.find((v: any) => v.name === mount?.name)?.secret;
  if (!secret?.secretName.endsWith('-tls')) return value;
  const item = (secret.items as { key: string; path: string }[]).find((i) => `${mount.mountPath}/${i.path}` === value);
  if (!item) throw new Error(`${name}=${value}: not a file of the mounted Secret ${secret.secretName}`);
  return path.join(tlsDir, item.key);
}
/* eslint-enable @typescript-eslint/no-explicit-any */

/** The environment a container starts with; optional Secret keys are left out (as when they are absent). */
function environment(objs: K8sObject[], container: { env?: EnvVar[]; envFrom?: { configMapRef?: { name: string } }[] }) {
  const env: Record<string, string> = {};
  for (const from of container.envFrom ?? []) Object.assign(env, find(objs, 'ConfigMap', from.configMapRef!.name).data);
  for (const e of container.env ?? []) {
    const ref = e.valueFrom?.secretKeyRef;
    if (ref?.optional) continue;
    const value = ref ? SECRET_VALUES[`${ref.name}/${ref.key}`] : e.value;
    if (value === undefined) throw new Error(`no stand-in for ${e.name} (${ref ? `${ref.name}/${ref.key}` : 'no value'})`);
    env[e.name] = standInFile(objs, container, e.name, value.replace(/\$\(([A-Z_]+)\)/g, (_, n: string) => env[n] ?? ''));
  }
  return env;
}

for (const { overlay, spec } of RENDERINGS) {
  describeWithTools(`${spec}: configuration`, () => {
    const objs = () => objects(spec);

    it.each(Object.keys(apps))('%s accepts its Deployment environment', (app) => {
      const container = find(objs(), 'Deployment', app).spec.template.spec.containers[0];
      expect(() => apps[app]!.load(environment(objs(), container))).not.toThrow();
      const unknown = (container.env as EnvVar[]).map((e) => e.name).filter((n) => !(n in apps[app]!.shape) && !RUNTIME_VARIABLES.has(n));
      expect(unknown).toEqual([]);
    });

    it('runs the distributed profile with Kafka, a ClickHouse server, Redis and S3', () => {
      const env = (app: string) => environment(objs(), find(objs(), 'Deployment', app).spec.template.spec.containers[0]);
      const gateway = loadGatewayConfig(env('gateway'));
      expect([gateway.PROFILE, gateway.RATE_LIMIT_STORE, gateway.IDENTITY_ADDR]).toEqual(['distributed', 'redis', 'dns:///identity-headless:50051']);
      const audit = loadAuditConfig(env('audit'));
      // prod: HTTPS to ClickHouse, verified with the namespace CA; mutual TLS on gRPC.
      const clickhouse = overlay === 'prod' ? 'https://clickhouse-secsvc:8443' : 'http://clickhouse-secsvc:8123';
      expect([audit.EVENT_BUS, audit.CLICKHOUSE_URL, audit.MIGRATE_ONLY]).toEqual(['kafka', clickhouse, false]);
      const worker = loadWorkerConfig(env('export-worker'));
      expect([worker.EXPORT_STORE, worker.CLICKHOUSE_URL]).toEqual(['s3', clickhouse]);
      expect([audit.CLICKHOUSE_CA_FILE !== undefined, worker.CLICKHOUSE_CA_FILE !== undefined]).toEqual([overlay === 'prod', overlay === 'prod']);
      for (const app of ['gateway', 'identity', 'policy', 'audit']) {
        expect([app, (apps[app]!.load(env(app)) as { GRPC_TLS: string }).GRPC_TLS]).toEqual([app, overlay === 'prod' ? 'mtls' : 'off']);
      }
      const identity = loadIdentityConfig(env('identity'));
      expect(identity.KAFKA_SSL).toBe(overlay === 'prod');
      // Each gRPC target has a headless Service behind it.
      for (const addr of [gateway.IDENTITY_ADDR, gateway.POLICY_ADDR, gateway.AUDIT_ADDR]) {
        const [, name, port] = /^dns:\/\/\/([a-z-]+):(\d+)$/.exec(addr)!;
        const svc = find(objs(), 'Service', name!);
        expect(svc.spec.clusterIP).toBe('None');
        expect(svc.spec.ports.map((p: { port: number }) => p.port)).toContain(Number(port));
      }
    });

    it('points export download links at the public origin: DOWNLOAD_BASE_URL is ISSUER/downloads, the Ingress host', () => {
      const gateway = loadGatewayConfig(environment(objs(), find(objs(), 'Deployment', 'gateway').spec.template.spec.containers[0]));
      expect(gateway.DOWNLOAD_BASE_URL).toBe(`${gateway.ISSUER}/downloads`);
      const url = new URL(gateway.DOWNLOAD_BASE_URL!);
      const ingress = find(objs(), 'Ingress', 'gateway').spec;
      expect(url.protocol).toBe('https:');
      expect(ingress.rules.map((r: { host: string }) => r.host)).toEqual([url.hostname]);
      expect(ingress.tls[0].hosts).toContain(url.hostname);
    });

    it('identity sends reset mail over SMTP once secsvc-secrets has SMTP_URL (optional), from the ConfigMap MAIL_FROM', () => {
      const container = find(objs(), 'Deployment', 'identity').spec.template.spec.containers[0];
      const ref = (container.env as EnvVar[]).find((e) => e.name === 'SMTP_URL')?.valueFrom?.secretKeyRef;
      expect(ref).toEqual({ name: 'secsvc-secrets', key: 'SMTP_URL', optional: true });
      const identity = loadIdentityConfig({ ...environment(objs(), container), SMTP_URL: 'smtp://mailer:pw@smtp.example.com:587' });
      expect(identity.MAIL_FROM?.address).toMatch(/^no-reply@/);
      expect(identity.SMTP_REQUIRE_TLS).toBe(true);
    });

    it('the migrations Job containers accept their environment with MIGRATE_ONLY=true', () => {
      const job = find(objs(), 'Job', 'secsvc-migrate').spec.template.spec;
      for (const c of [...job.initContainers, ...job.containers]) {
        const config = apps[c.name]!.load(environment(objs(), c)) as { MIGRATE_ONLY: boolean };
        expect([c.name, config.MIGRATE_ONLY]).toEqual([c.name, true]);
      }
    });

    it('documents in secret.example.env exactly the keys of secsvc-secrets that the manifests reference', () => {
      const referenced = new Set<string>();
      const walk = (node: unknown): void => {
        if (Array.isArray(node)) return node.forEach(walk);
        if (node === null || typeof node !== 'object') return;
        const ref = (node as { secretKeyRef?: { name: string; key: string } }).secretKeyRef;
        if (ref?.name === 'secsvc-secrets') referenced.add(ref.key);
        Object.values(node).forEach(walk);
      };
      walk(objs());
      const example = readFileSync(path.join(k8sDir, 'secret.example.env'), 'utf8');
      const documented = new Set([...example.matchAll(/^(?:# )?([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1]!));
      expect([...referenced].sort()).toEqual([...documented].sort());
    });

    it('declares the Kafka topic and (prod) ACLs the code uses', () => {
      const topic = find(objs(), 'KafkaTopic', AUTH_EVENTS_TOPIC);
      expect(String(topic.spec.partitions)).toBe(find(objs(), 'ConfigMap', 'secsvc-config').data.KAFKA_PARTITIONS);
      expect(topic.metadata.labels!['strimzi.io/cluster']).toBe('secsvc-kafka');
      const user = objs().find((o) => o.kind === 'KafkaUser');
      if (overlay === 'dev') return expect(user).toBeUndefined();
      const acls = user!.spec.authorization.acls as { resource: { type: string; name: string }; operations: string[] }[];
      expect(acls.find((a) => a.resource.type === 'topic' && a.resource.name === AUTH_EVENTS_TOPIC)?.operations).toEqual(expect.arrayContaining(['Read', 'Write', 'Create', 'Describe']));
      expect(acls.find((a) => a.resource.type === 'group' && a.resource.name === AUDIT_CONSUMER_GROUP)?.operations).toContain('Read');
      // The SCRAM user the Deployments log in as is this KafkaUser, whose generated Secret they read.
      const env = find(objs(), 'Deployment', 'audit').spec.template.spec.containers[0].env as EnvVar[];
      expect(env.find((e) => e.name === 'KAFKA_SASL_USERNAME')?.value).toBe(user!.metadata.name);
      expect(env.find((e) => e.name === 'KAFKA_SASL_PASSWORD')?.valueFrom?.secretKeyRef?.name).toBe(user!.metadata.name);
    });

    it('sets in the ConfigMap only variables some app reads', () => {
      const known = new Set(Object.values(apps).flatMap((a) => Object.keys(a.shape)));
      const data = find(objs(), 'ConfigMap', 'secsvc-config').data as Record<string, string>;
      expect(Object.keys(data).filter((k) => !known.has(k))).toEqual([]);
    });
  });
}
