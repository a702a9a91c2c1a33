/**
 * Production operations in the manifests: graceful rollouts (preStop and grace period against the processes'
 * own shutdown limit), mutual TLS and HTTPS to ClickHouse with cert-manager certificates (prod), backups to S3
 * (prod), and images pinned by digest once the documented release step has run (prod).
 */
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { describeWithTools, find, k8sDir, objects, parse, RENDERINGS, rootDir, run, tools, type K8sObject } from './support/tools';

const APPS = ['gateway', 'identity', 'policy', 'audit', 'export-worker'];
const GRPC_SERVICES = ['identity', 'policy', 'audit'];
/** The shutdown limit every process installs (libs/shared/src/shutdown.ts, installShutdown's default). */
const SHUTDOWN_SECONDS = (() => {
  const m = /timeoutMs = ([\d_]+)\)/.exec(readFileSync(path.join(rootDir, 'libs', 'shared', 'src', 'shutdown.ts'), 'utf8'));
  if (!m) throw new Error('installShutdown has no default timeoutMs any more: update this test');
  return Number(m[1]!.replace(/_/g, '')) / 1000;
})();

/* eslint-disable @typescript-eslint/no-explicit-any -- rendered manifests are free-form */
const container = (d: K8sObject): any => d.spec.template.spec.containers[0];
const envOf = (c: any, name: string): string | undefined => c.env?.find((e: any) => e.name === name)?.value;
/** The Secret item a file path of the container names (through its volume mounts). */
function secretItem(pod: any, c: any, file: string): { secret: string; key: string } | undefined {
  const mount = c.volumeMounts?.find((m: any) => file.startsWith(`${m.mountPath}/`));
  const secret = pod.volumes.find((v: any) => v.name === mount?.name)?.secret;
  const item = secret?.items?.find((i: any) => `${mount.mountPath}/${i.path}` === file);
  return item ? { secret: secret.secretName, key: item.key } : undefined;
}
/* eslint-enable @typescript-eslint/no-explicit-any */

for (const { overlay, spec } of RENDERINGS) {
  describeWithTools(`${spec}: graceful rollouts`, () => {
    it(`gives every Deployment a preStop sleep and a grace period covering it plus the ${SHUTDOWN_SECONDS} s shutdown limit`, () => {
      const deployments = objects(spec).filter((o) => o.kind === 'Deployment');
      expect(deployments.map((d) => d.metadata.name).sort()).toEqual([...APPS].sort());
      for (const d of deployments) {
        const c = container(d);
        // exec sleep: the images are Debian (bookworm-slim), whose coreutils has /bin/sleep (dockerfile check below).
        const command = c.lifecycle?.preStop?.exec?.command as string[] | undefined;
        expect([d.metadata.name, command?.[0]]).toEqual([d.metadata.name, 'sleep']);
        const preStop = Number(command![1]);
        expect(preStop).toBeGreaterThanOrEqual(3);
        const grace = d.spec.template.spec.terminationGracePeriodSeconds;
        // SIGTERM comes after preStop; the process then has up to SHUTDOWN_SECONDS before it exits on its own.
        // The kubelet's SIGKILL must come later (a margin of at least 2 s), and not much later than needed.
        expect([d.metadata.name, grace >= preStop + SHUTDOWN_SECONDS + 2, grace <= preStop + SHUTDOWN_SECONDS + 15]).toEqual([d.metadata.name, true, true]);
        // Rolling updates never go below the desired count while pods drain.
        expect(d.spec.strategy.rollingUpdate.maxUnavailable).toBe(0);
      }
    });

    it('runs the apps on a Debian image that has sleep (the preStop command)', () => {
      const dockerfile = readFileSync(path.join(rootDir, 'Dockerfile'), 'utf8');
      expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:[\d.]+-(bookworm|trixie)-slim$/m);
      expect(dockerfile).toMatch(/^FROM \$\{NODE_IMAGE\} AS runtime$/m);
    });
  });

  if (overlay !== 'prod') continue;

  describeWithTools(`${spec}: TLS inside the cluster`, () => {
    const objs = () => objects(spec);
    const certificate = (name: string) => find(objs(), 'Certificate', name);

    it('issues every certificate from the namespace CA (a self-signed root), before the apps start (pre phase)', () => {
      const certs = objs().filter((o) => o.kind === 'Certificate');
      expect(certs.map((c) => c.metadata.name).sort()).toEqual(['audit-grpc-tls', 'clickhouse-tls', 'gateway-grpc-tls', 'identity-grpc-tls', 'policy-grpc-tls', 'secsvc-ca']);
      expect(certificate('secsvc-ca').spec).toMatchObject({ isCA: true, issuerRef: { kind: 'Issuer', name: 'secsvc-selfsigned' } });
      expect(find(objs(), 'Issuer', 'secsvc-selfsigned').spec).toEqual({ selfSigned: {} });
      expect(find(objs(), 'Issuer', 'secsvc-ca').spec).toEqual({ ca: { secretName: certificate('secsvc-ca').spec.secretName } });
      for (const c of certs.filter((x) => x.metadata.name !== 'secsvc-ca')) {
        expect([c.metadata.name, c.spec.issuerRef.name, c.spec.secretName]).toEqual([c.metadata.name, 'secsvc-ca', c.metadata.name]);
        expect(c.metadata.labels?.['secsvc.io/rollout-phase']).toBe('pre');
      }
    });

    it('keeps the CA key when the CA is renewed, and renews it earlier than any leaf lives (each pod trusts its own Secret\'s ca.crt)', () => {
      const hours = (d: string) => Number(/^(\d+)h$/.exec(d)![1]);
      const ca = certificate('secsvc-ca').spec;
      expect(ca.privateKey.rotationPolicy).toBe('Never');
      // A leaf issued just before the CA's renewal is re-issued (with the new ca.crt) before the old CA certificate ends.
      const leaves = objs().filter((o) => o.kind === 'Certificate' && o.metadata.name !== 'secsvc-ca');
      for (const c of leaves) expect([c.metadata.name, hours(c.spec.duration) - hours(c.spec.renewBefore) < hours(ca.renewBefore)]).toEqual([c.metadata.name, true]);
      // The rollover of the CA's key is documented, and linked from the certificates runbook.
      const runbooks = path.join(rootDir, 'docs', 'runbooks');
      expect(readFileSync(path.join(runbooks, 'certificates.md'), 'utf8')).toContain('(ca-rollover.md)');
      const rollover = readFileSync(path.join(runbooks, 'ca-rollover.md'), 'utf8');
      for (const c of leaves) expect(rollover).toContain(c.metadata.name);
    });

    it('gives each gRPC service a server and client certificate for the names the gateway dials, mounted at the GRPC_TLS_* files', () => {
      const config = find(objs(), 'ConfigMap', 'secsvc-config').data;
      for (const app of [...GRPC_SERVICES, 'gateway']) {
        const d = find(objs(), 'Deployment', app);
        const c = container(d);
        expect([app, envOf(c, 'GRPC_TLS')]).toEqual([app, 'mtls']);
        const files = { cert: envOf(c, 'GRPC_TLS_CERT_FILE')!, key: envOf(c, 'GRPC_TLS_KEY_FILE')!, ca: envOf(c, 'GRPC_TLS_CA_FILE')! };
        expect(Object.fromEntries(Object.entries(files).map(([k, f]) => [k, secretItem(d.spec.template.spec, c, f)]))).toEqual({
          cert: { secret: `${app}-grpc-tls`, key: 'tls.crt' },
          key: { secret: `${app}-grpc-tls`, key: 'tls.key' },
          ca: { secret: `${app}-grpc-tls`, key: 'ca.crt' },
        });
        const usages = certificate(`${app}-grpc-tls`).spec.usages;
        expect([app, usages.includes('client auth'), usages.includes('server auth')]).toEqual([app, true, app !== 'gateway']);
        if (app === 'gateway') continue;
        // The gateway verifies the host of its target address (dns:///<app>-headless:<port>).
        const host = /^dns:\/\/\/([^:]+):\d+$/.exec(config[`${app.toUpperCase()}_ADDR`])![1];
        expect(certificate(`${app}-grpc-tls`).spec.dnsNames).toContain(host);
      }
    });

    it('serves ClickHouse over HTTPS with its certificate, which audit, export-worker and the migrations verify with the CA', () => {
      const config = find(objs(), 'ConfigMap', 'secsvc-config').data;
      const url = new URL(config.CLICKHOUSE_URL);
      expect(url.protocol).toBe('https:');
      const chi = find(objs(), 'ClickHouseInstallation', 'secsvc').spec;
      expect(String(chi.configuration.settings.https_port)).toBe(url.port);
      const pod = chi.templates.podTemplates[0].spec;
      const certFile = chi.configuration.settings['openSSL/server/certificateFile'];
      expect(secretItem(pod, pod.containers[0], certFile)).toEqual({ secret: 'clickhouse-tls', key: 'tls.crt' });
      expect(secretItem(pod, pod.containers[0], chi.configuration.settings['openSSL/server/privateKeyFile'])).toEqual({ secret: 'clickhouse-tls', key: 'tls.key' });
      expect(certificate('clickhouse-tls').spec.dnsNames).toContain(url.hostname);
      const service = chi.templates.serviceTemplates.find((t: { name: string }) => t.name === chi.defaults.templates.serviceTemplate);
      expect(service.spec.ports.map((p: { port: number }) => p.port)).toEqual(expect.arrayContaining([Number(url.port), 9440]));
      const job = find(objs(), 'Job', 'secsvc-migrate');
      for (const [w, c] of [
        [find(objs(), 'Deployment', 'audit'), container(find(objs(), 'Deployment', 'audit'))],
        [find(objs(), 'Deployment', 'export-worker'), container(find(objs(), 'Deployment', 'export-worker'))],
        [job, job.spec.template.spec.containers[0]],
      ] as const) {
        expect([w.metadata.name, secretItem(w.spec.template.spec, c, envOf(c, 'CLICKHOUSE_CA_FILE')!)]).toEqual([w.metadata.name, { secret: 'clickhouse-tls', key: 'ca.crt' }]);
      }
    });
  });

  describeWithTools(`${spec}: backups`, () => {
    const objs = () => objects(spec);

    it('archives PostgreSQL through the barman-cloud plugin to S3 and takes a nightly base backup, kept 30 days', () => {
      const store = find(objs(), 'ObjectStore', 'secsvc-pg-backups').spec;
      expect(store.configuration.destinationPath).toMatch(/^s3:\/\//);
      expect(store.configuration.s3Credentials.accessKeyId).toEqual({ name: 'secsvc-backup-s3', key: 'ACCESS_KEY_ID' });
      expect(store.retentionPolicy).toBe('30d');
      const plugin = find(objs(), 'Cluster', 'secsvc-pg').spec.plugins.find((p: { name: string }) => p.name === 'barman-cloud.cloudnative-pg.io');
      expect(plugin).toEqual({ name: 'barman-cloud.cloudnative-pg.io', isWALArchiver: true, parameters: { barmanObjectName: 'secsvc-pg-backups' } });
      const scheduled = objs().filter((o) => o.kind === 'ScheduledBackup');
      expect(scheduled.map((s) => [s.spec.cluster.name, s.spec.method, s.spec.pluginConfiguration.name])).toEqual([['secsvc-pg', 'plugin', 'barman-cloud.cloudnative-pg.io']]);
      expect(scheduled[0]!.spec.schedule.split(' ')).toHaveLength(6);
    });

    it('backs ClickHouse up nightly with BACKUP DATABASE ... TO S3, over the secure port, credentials from Secrets only', () => {
      const cron = find(objs(), 'CronJob', 'clickhouse-backup');
      expect(cron.spec.concurrencyPolicy).toBe('Forbid');
      const pod = cron.spec.jobTemplate.spec.template.spec;
      const c = pod.containers[0];
      expect(c.args[0]).toMatch(/BACKUP DATABASE %s TO S3\('%s\/%s', '%s', '%s'\)/);
      expect(c.args[0]).toMatch(/<port>9440<\/port>\s*<secure>true<\/secure>/);
      expect(c.args[0]).toContain('<password from_env="CLICKHOUSE_PASSWORD"/>');
      expect(secretItem(pod, c, /<caConfig>([^<]+)<\/caConfig>/.exec(c.args[0])![1]!)).toEqual({ secret: 'clickhouse-tls', key: 'ca.crt' });
      const refs = Object.fromEntries(c.env.filter((e: { valueFrom?: unknown }) => e.valueFrom).map((e: { name: string; valueFrom: { secretKeyRef: { name: string; key: string } } }) => [e.name, e.valueFrom.secretKeyRef]));
      expect(refs).toEqual({
        CLICKHOUSE_PASSWORD: { name: 'secsvc-secrets', key: 'CLICKHOUSE_PASSWORD' },
        ACCESS_KEY_ID: { name: 'secsvc-backup-s3', key: 'ACCESS_KEY_ID' },
        SECRET_ACCESS_KEY: { name: 'secsvc-backup-s3', key: 'SECRET_ACCESS_KEY' },
      });
      // The server that runs the BACKUP, and nothing else, reaches S3 (443 outside the private ranges).
      const policy = find(objs(), 'NetworkPolicy', 'clickhouse').spec;
      expect(policy.egress.map((e: { ports: { port: number }[] }) => e.ports.map((p) => p.port))).toEqual([[443]]);
    });
  });

  describeWithTools(`${spec}: images by digest`, () => {
    it('pins every image by digest once the release step has set our images (kustomize edit set image)', () => {
      // The release step of deploy/k8s/README.md, on a copy of the overlay next to the original (same relative paths).
      const copy = mkdtempSync(path.join(k8sDir, 'overlays', '.release-test-'));
      try {
        cpSync(path.join(k8sDir, 'overlays', 'prod'), copy, { recursive: true });
        const digest = (app: string) => `sha256:${Buffer.from(app).toString('hex').padEnd(64, '0').slice(0, 64)}`;
        for (const app of APPS) {
          const res = run(tools.kustomize!, ['edit', 'set', 'image', `secsvc/${app}=registry.example.com/secsvc/${app}:0.1.0@${digest(app)}`], undefined, copy);
          expect([app, res.status, res.stderr]).toEqual([app, 0, '']);
        }
        const built = run(tools.kustomize!, ['build', copy]);
        expect(built.status).toBe(0);
        const images = new Set<string>();
        const walk = (node: unknown): void => {
          if (Array.isArray(node)) return node.forEach(walk);
          if (node === null || typeof node !== 'object') return;
          for (const [k, v] of Object.entries(node)) {
            if (k === 'image' && typeof v === 'string') images.add(v);
            else walk(v);
          }
        };
        walk(parse(built.stdout));
        expect([...images].filter((i) => !/^[a-z0-9./-]+(:[\w.-]+)?@sha256:[0-9a-f]{64}$/.test(i))).toEqual([]);
        for (const app of APPS) expect(images).toContain(`registry.example.com/secsvc/${app}:0.1.0@${digest(app)}`);
      } finally {
        rmSync(copy, { recursive: true, force: true });
      }
    });
  });
}

it('reads the shutdown limit from the code', () => expect(SHUTDOWN_SECONDS).toBe(15));
