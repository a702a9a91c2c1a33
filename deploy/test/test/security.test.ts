/**
 * Security properties of every rendered overlay, alone and with each component: non-root read-only containers,
 * probes, resources, no service account tokens, Secrets only by reference, PDBs and HPAs, the migrations Job, and
 * NetworkPolicies that let each app talk only to what it needs (checked by evaluating the policies, see
 * support/netpol.ts).
 */
import { connectionAllowed, egressAllowed, ingressAllowed, type Endpoint, type Labels } from './support/netpol';
import { describeWithTools, find, objects, RENDERINGS, type K8sObject } from './support/tools';

const APPS = ['gateway', 'identity', 'policy', 'audit', 'export-worker'] as const;
const GRPC: Record<string, number> = { identity: 50051, policy: 50052, audit: 50053 };
const ADMIN: Record<string, number> = { gateway: 9100, identity: 9101, policy: 9102, audit: 9103, 'export-worker': 9104 };
const WORKLOADS = ['Deployment', 'StatefulSet', 'Job', 'CronJob'];

/* eslint-disable @typescript-eslint/no-explicit-any -- pod specs of rendered manifests are free-form */
type Container = { name: string; image: string; env?: any[]; envFrom?: any[]; resources?: any; securityContext?: any; volumeMounts?: any[]; [k: string]: any };
const podTemplate = (w: K8sObject): any => (w.kind === 'CronJob' ? w.spec.jobTemplate.spec.template : w.spec.template);
const podSpec = (w: K8sObject): any => podTemplate(w).spec;
/* eslint-enable @typescript-eslint/no-explicit-any */
const containersOf = (w: K8sObject): Container[] => [...(podSpec(w).initContainers ?? []), ...podSpec(w).containers];
const workloads = (objs: K8sObject[]) => objs.filter((o) => WORKLOADS.includes(o.kind));
/** Our own workloads: the apps and the migrations Job (not the dependencies). */
const ours = (objs: K8sObject[]) => workloads(objs).filter((w) => podTemplate(w).metadata.labels?.['app.kubernetes.io/part-of'] === 'secsvc');

/** Names whose values are credentials: never a literal in a manifest or a ConfigMap. */
const SENSITIVE = /SECRET|PASSWORD|CREDENTIAL|(^|_)TOKEN$|_KEY$|_KEY_ID$|^DATABASE_URL$|^REDIS_URL$|^SMTP_URL$|^REDISCLI_AUTH$/;

for (const { overlay, spec } of RENDERINGS) {
  describeWithTools(spec, () => {
    const objs = () => objects(spec);
    const deployment = (name: string) => find(objs(), 'Deployment', name);

    it('renders every app, the migrations Job and the dependencies into one namespace', () => {
      for (const app of APPS) expect(deployment(app).metadata.namespace).toBe(overlay === 'prod' ? 'secsvc' : 'secsvc-dev');
      find(objs(), 'Job', 'secsvc-migrate');
      for (const [kind, name] of [
        ['Cluster', 'secsvc-pg'],
        ['Kafka', 'secsvc-kafka'],
        ['KafkaNodePool', 'dual-role'],
        ['KafkaTopic', 'auth-events'],
        ['ClickHouseInstallation', 'secsvc'],
        ['StatefulSet', 'redis'],
      ] as const) {
        find(objs(), kind, name);
      }
      const namespaced = objs().filter((o) => o.kind !== 'Namespace');
      expect(new Set(namespaced.map((o) => o.metadata.namespace)).size).toBe(1);
    });

    it('runs every container non-root, read-only, without privilege escalation or capabilities', () => {
      expect(workloads(objs()).length).toBeGreaterThanOrEqual(7);
      for (const w of workloads(objs())) {
        const pod = podSpec(w);
        expect([w.metadata.name, pod.securityContext?.runAsNonRoot]).toEqual([w.metadata.name, true]);
        expect(pod.securityContext?.runAsUser).toBeGreaterThan(0);
        expect(pod.securityContext?.seccompProfile?.type).toBe('RuntimeDefault');
        expect(pod.hostNetwork ?? false).toBe(false);
        expect(pod.hostPID ?? false).toBe(false);
        for (const c of containersOf(w)) {
          const sc = c.securityContext ?? {};
          const where = `${w.kind} ${w.metadata.name} container ${c.name}`;
          expect([where, sc.readOnlyRootFilesystem, sc.allowPrivilegeEscalation, sc.capabilities?.drop, sc.privileged ?? false]).toEqual([
            where,
            true,
            false,
            ['ALL'],
            false,
          ]);
          expect([where, sc.runAsNonRoot ?? pod.securityContext.runAsNonRoot]).toEqual([where, true]);
          expect(sc.runAsUser ?? pod.securityContext.runAsUser).toBeGreaterThan(0);
        }
      }
    });

    it('gives our containers a writable /tmp; the only writable volumes are emptyDirs, other mounts are read-only Secrets', () => {
      // prod also backs ClickHouse up with a CronJob of its own.
      expect(ours(objs()).map((w) => w.metadata.name).sort()).toEqual([...APPS, 'secsvc-migrate', ...(overlay === 'prod' ? ['clickhouse-backup'] : [])].sort());
      for (const w of ours(objs())) {
        const volumes = podSpec(w).volumes as { name: string; emptyDir?: object }[];
        for (const c of containersOf(w)) {
          const tmp = (c.volumeMounts ?? []).find((m: { mountPath: string }) => m.mountPath === '/tmp');
          expect([w.metadata.name, c.name, tmp?.name]).toEqual([w.metadata.name, c.name, 'tmp']);
        }
        expect(volumes.find((v) => v.name === 'tmp')?.emptyDir).toBeDefined();
      }
      for (const w of workloads(objs())) {
        const volumes = podSpec(w).volumes as { name: string; emptyDir?: object; secret?: object }[];
        for (const c of containersOf(w)) {
          for (const m of c.volumeMounts ?? []) {
            const v = volumes.find((x) => x.name === m.name)!;
            const ok = !!v.emptyDir || (!!v.secret && m.readOnly === true);
            expect([w.metadata.name, c.name, m.name, ok]).toEqual([w.metadata.name, c.name, m.name, true]);
          }
        }
      }
    });

    it('mounts the SAML SP key pair into the gateway only: the required TLS Secret secsvc-saml-sp, read-only, 0400 with the fsGroup, at the files the gateway reads', () => {
      const pod = podSpec(deployment('gateway'));
      const c = pod.containers[0] as Container;
      const volume = (pod.volumes as { name: string; secret?: { secretName: string; optional?: boolean; defaultMode?: number; items?: { key: string; path: string }[] } }[]).find(
        (v) => v.secret?.secretName === 'secsvc-saml-sp',
      )!;
      expect(volume.secret!.optional ?? false).toBe(false);
      expect(volume.secret!.defaultMode).toBe(0o400);
      // The keys of a kubernetes.io/tls Secret, as files of the same names.
      expect(volume.secret!.items).toEqual([
        { key: 'tls.key', path: 'tls.key' },
        { key: 'tls.crt', path: 'tls.crt' },
      ]);
      const mount = c.volumeMounts!.find((m: { name: string }) => m.name === volume.name);
      expect(mount.readOnly).toBe(true);
      const env = (name: string) => c.env!.find((e) => e.name === name)?.value;
      expect([env('SAML_SP_KEY_FILE'), env('SAML_SP_CERT_FILE')]).toEqual([`${mount.mountPath}/tls.key`, `${mount.mountPath}/tls.crt`]);
      // 0400 files are readable by UID 10001 only through the group the kubelet gives them (fsGroup).
      expect(pod.securityContext.fsGroup).toBe(c.securityContext.runAsGroup ?? pod.securityContext.runAsGroup);
      // No other workload sees the key.
      const users = workloads(objs()).filter((w) => JSON.stringify(podSpec(w)).includes('secsvc-saml-sp'));
      expect(users.map((w) => w.metadata.name)).toEqual(['gateway']);
    });

    it('sets CPU and memory requests and limits on every container', () => {
      for (const w of workloads(objs())) {
        for (const c of containersOf(w)) {
          const r = c.resources ?? {};
          expect([w.metadata.name, c.name, r.requests?.cpu, r.requests?.memory, r.limits?.cpu, r.limits?.memory].every(Boolean)).toBe(true);
        }
      }
    });

    it('probes every long-running container: HTTP /healthz and /readyz on the admin port, gRPC health on gRPC services', () => {
      for (const w of workloads(objs()).filter((x) => x.kind !== 'Job' && x.kind !== 'CronJob')) {
        for (const c of podSpec(w).containers as Container[]) {
          for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) expect([w.metadata.name, probe, !!c[probe]]).toEqual([w.metadata.name, probe, true]);
        }
      }
      for (const app of APPS) {
        const c = podSpec(deployment(app)).containers[0] as Container;
        const adminPort = c.ports.find((p: { name: string }) => p.name === 'admin');
        expect(adminPort.containerPort).toBe(ADMIN[app]);
        expect(c.env!.find((e) => e.name === 'ADMIN_HOST')?.value).toBe('0.0.0.0');
        expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'admin' });
        if (GRPC[app]) {
          expect(c.startupProbe.grpc).toEqual({ port: GRPC[app] });
          expect(c.livenessProbe.grpc).toEqual({ port: GRPC[app] });
          expect(c.env!.find((e) => e.name === 'GRPC_PORT')?.value).toBe(String(GRPC[app]));
        } else {
          expect(c.startupProbe.httpGet).toEqual({ path: '/healthz', port: 'admin' });
          expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'admin' });
        }
      }
    });

    it('mounts no service account token, and every pod has its own ServiceAccount without automount', () => {
      for (const w of workloads(objs())) {
        const pod = podSpec(w);
        expect([w.metadata.name, pod.automountServiceAccountToken]).toEqual([w.metadata.name, false]);
        expect(pod.serviceAccountName).toBeDefined();
        const sa = find(objs(), 'ServiceAccount', pod.serviceAccountName);
        expect(sa.automountServiceAccountToken).toBe(false);
      }
    });

    it('references Secrets and never carries one: no Secret objects, credentials only through secretKeyRef', () => {
      expect(objs().filter((o) => o.kind === 'Secret')).toEqual([]);
      const configMaps = objs().filter((o) => o.kind === 'ConfigMap');
      for (const cm of configMaps) expect(Object.keys(cm.data ?? {}).filter((k) => SENSITIVE.test(k))).toEqual([]);
      let refs = 0;
      for (const w of workloads(objs())) {
        for (const c of containersOf(w)) {
          for (const e of c.env ?? []) {
            if (!SENSITIVE.test(e.name)) continue;
            expect([w.metadata.name, c.name, e.name, e.value]).toEqual([w.metadata.name, c.name, e.name, undefined]);
            expect(e.valueFrom?.secretKeyRef?.name).toBeDefined();
            refs++;
          }
          for (const f of c.envFrom ?? []) expect(f.secretRef).toBeUndefined();
        }
      }
      expect(refs).toBeGreaterThan(10);
      // The ClickHouse user's password comes from the same Secret key the apps read.
      const chi = find(objs(), 'ClickHouseInstallation', 'secsvc');
      expect(chi.spec.configuration.users['secsvc/password']).toEqual({ valueFrom: { secretKeyRef: { name: 'secsvc-secrets', key: 'CLICKHOUSE_PASSWORD' } } });
    });

    it('pins every image to a tag other than latest, and in prod every third-party image by digest too', () => {
      const chi = find(objs(), 'ClickHouseInstallation', 'secsvc');
      const images = [...workloads(objs()).flatMap((w) => containersOf(w).map((c) => c.image)), chi.spec.templates.podTemplates[0].spec.containers[0].image as string];
      for (const image of images) expect(image).toMatch(/^[a-z0-9./-]+:(?!latest[@]|latest$)[A-Za-z0-9._-]+(@sha256:[0-9a-f]{64})?$/);
      // Ours are pinned by the release step (release.test.ts); the others must already be.
      if (overlay === 'prod') for (const image of images.filter((i) => !i.startsWith('secsvc/'))) expect(image).toMatch(/@sha256:[0-9a-f]{64}$/);
    });

    it('has a PodDisruptionBudget for every app, HPAs for gateway and audit and a KEDA ScaledObject for export-worker (which then set no replicas)', () => {
      for (const app of APPS) {
        const pdb = find(objs(), 'PodDisruptionBudget', app);
        expect(pdb.spec.selector.matchLabels).toEqual(deployment(app).spec.selector.matchLabels);
      }
      const hpas = objs().filter((o) => o.kind === 'HorizontalPodAutoscaler');
      expect(hpas.map((h) => h.metadata.name).sort()).toEqual(['audit', 'gateway']);
      // export-worker scales on its queue (KEDA makes the HPA); CPU stays a second trigger.
      const so = find(objs(), 'ScaledObject', 'export-worker');
      expect(so.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'export-worker' });
      expect(so.spec.minReplicaCount).toBeGreaterThanOrEqual(1);
      expect(so.spec.maxReplicaCount).toBeGreaterThan(so.spec.minReplicaCount);
      expect(so.spec.triggers.map((t: { type: string }) => t.type)).toEqual(['prometheus', 'cpu']);
      const ns = deployment('export-worker').metadata.namespace;
      expect(so.spec.triggers[0].metadata.query).toBe(`max(export_queue_depth{namespace="${ns}", state="queued"})`);
      expect(deployment('export-worker').spec.replicas).toBeUndefined();
      for (const hpa of hpas) {
        expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: hpa.metadata.name });
        expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(1);
        expect(hpa.spec.maxReplicas).toBeGreaterThanOrEqual(hpa.spec.minReplicas);
        expect(deployment(hpa.metadata.name).spec.replicas).toBeUndefined();
        // An HPA on CPU utilization needs CPU requests on the target's containers.
        expect(podSpec(deployment(hpa.metadata.name)).containers[0].resources.requests.cpu).toBeDefined();
      }
      // More audit consumers than auth-events partitions would idle.
      expect(find(objs(), 'HorizontalPodAutoscaler', 'audit').spec.maxReplicas).toBeLessThanOrEqual(find(objs(), 'KafkaTopic', 'auth-events').spec.partitions);
    });

    it('runs the migrations Job with MIGRATE_ONLY=true in the identity, policy and audit images, in the pre-rollout phase', () => {
      const job = find(objs(), 'Job', 'secsvc-migrate');
      const cs = containersOf(job);
      expect(cs.map((c) => c.name)).toEqual(['identity', 'policy', 'audit']);
      for (const c of cs) {
        expect(c.image.split(':')[0]).toBe(`secsvc/${c.name}`);
        expect(c.image).toBe(podSpec(deployment(c.name)).containers[0].image);
        expect(c.command).toEqual(['node', `apps/${c.name}/dist/main.js`]);
        expect(c.env!.find((e) => e.name === 'MIGRATE_ONLY')?.value).toBe('true');
        expect(c.ports).toBeUndefined();
      }
      expect(podSpec(job).restartPolicy).toBe('Never');
      expect(job.spec.backoffLimit).toBeGreaterThan(0);
      // rollout.sh applies the `pre` phase (config, policies, dependencies, the Job), waits, then the rest.
      const pre = objs().filter((o) => o.metadata.labels?.['secsvc.io/rollout-phase'] === 'pre');
      const preKinds = new Set(pre.map((o) => o.kind));
      for (const k of ['Namespace', 'ConfigMap', 'NetworkPolicy', 'Job', 'Cluster', 'Kafka', 'KafkaTopic', 'ClickHouseInstallation', 'StatefulSet']) expect(preKinds).toContain(k);
      expect(pre.filter((o) => o.kind === 'Deployment')).toEqual([]);
      expect(objs().filter((o) => o.kind === 'NetworkPolicy' && !pre.includes(o))).toEqual([]);
      const sa = find(objs(), 'ServiceAccount', 'migrate');
      expect(pre).toContain(sa);
    });

    describe('NetworkPolicies', () => {
      const labelsOf = (w: K8sObject): Labels => podTemplate(w).metadata.labels;
      const app = (name: string) => labelsOf(deployment(name));
      const migrate = () => labelsOf(find(objs(), 'Job', 'secsvc-migrate'));
      const redis = () => labelsOf(find(objs(), 'StatefulSet', 'redis'));
      // Pods the operators make, with the labels they are documented to carry.
      const postgres: Labels = { 'cnpg.io/cluster': 'secsvc-pg', 'cnpg.io/instanceRole': 'primary' };
      const kafka: Labels = { 'strimzi.io/cluster': 'secsvc-kafka', 'strimzi.io/kind': 'Kafka', 'strimzi.io/name': 'secsvc-kafka-kafka' };
      const clickhouse: Labels = { 'clickhouse.altinity.com/chi': 'secsvc', 'clickhouse.altinity.com/cluster': 'secsvc' };
      const outside: Endpoint = { ip: '203.0.113.7' };
      const ingressController: Endpoint = { pod: { 'app.kubernetes.io/name': 'ingress-nginx' }, namespace: { 'kubernetes.io/metadata.name': 'ingress-nginx' } };
      const monitoring: Endpoint = { pod: { app: 'prometheus' }, namespace: { 'kubernetes.io/metadata.name': 'monitoring' } };
      const kubeDns: Endpoint = { pod: { 'k8s-app': 'kube-dns' }, namespace: { 'kubernetes.io/metadata.name': 'kube-system' } };
      const s3: Endpoint = { ip: '52.216.1.1' };
      const smtpServer: Endpoint = { ip: '198.51.100.25' };
      const callers = () => ({
        gateway: app('gateway'),
        identity: app('identity'),
        policy: app('policy'),
        audit: app('audit'),
        'export-worker': app('export-worker'),
        migrate: migrate(),
        redis: redis(),
      });

      it('deny everything by default and select every pod with a policy of its own', () => {
        const deny = find(objs(), 'NetworkPolicy', 'default-deny-all');
        expect(deny.spec).toEqual({ podSelector: {}, policyTypes: ['Ingress', 'Egress'] });
        for (const w of ours(objs()).concat(find(objs(), 'StatefulSet', 'redis'))) {
          const own = objs().filter((o) => o.kind === 'NetworkPolicy' && Object.keys(o.spec.podSelector).length > 0 && o.spec.podSelector.matchLabels?.['app.kubernetes.io/name'] === labelsOf(w)['app.kubernetes.io/name']);
          expect([w.metadata.name, own.length]).toEqual([w.metadata.name, 1]);
        }
      });

      it('let only the gateway be reached from outside, on its HTTP port only', () => {
        expect(ingressAllowed(objs(), app('gateway'), outside, 8080)).toBe(true);
        expect(ingressAllowed(objs(), app('gateway'), ingressController, 8080)).toBe(true);
        expect(ingressAllowed(objs(), app('gateway'), outside, 9100)).toBe(false);
        for (const [name, labels] of Object.entries(callers()).filter(([n]) => n !== 'gateway')) {
          for (const port of [GRPC[name] ?? 0, ADMIN[name] ?? 0, 6379, 8080].filter(Boolean)) {
            expect([name, port, ingressAllowed(objs(), labels, outside, port), ingressAllowed(objs(), labels, ingressController, port)]).toEqual([name, port, false, false]);
          }
        }
        for (const [labels, port] of [[postgres, 5432], [kafka, 9092], [clickhouse, 8123]] as const) {
          expect(ingressAllowed(objs(), labels, outside, port)).toBe(false);
        }
      });

      it('let identity, policy and audit accept gRPC from the gateway only', () => {
        for (const svc of ['identity', 'policy', 'audit']) {
          for (const [name, labels] of Object.entries(callers())) {
            expect([name, svc, connectionAllowed(objs(), labels, app(svc), GRPC[svc]!)]).toEqual([name, svc, name === 'gateway']);
          }
        }
      });

      it('let each app reach only the dependencies it uses', () => {
        const deps: Record<string, [Labels | Endpoint, number]> = {
          postgres: [postgres, 5432],
          kafka: [kafka, 9092],
          clickhouse: [clickhouse, 8123],
          clickhouses: [clickhouse, 8443],
          'clickhouse-native': [clickhouse, 9000],
          redis: [redis(), 6379],
          s3: [s3, 443],
          smtp: [smtpServer, 587],
          smtps: [smtpServer, 465],
        };
        // prod speaks HTTPS to ClickHouse (8443) only; dev plain HTTP (8443 stays open for an overlay with TLS).
        const ch = overlay === 'prod' ? ['clickhouses'] : ['clickhouse', 'clickhouses'];
        const uses: Record<string, string[]> = {
          gateway: ['redis'],
          identity: ['postgres', 'kafka', 'smtp', 'smtps'],
          policy: ['postgres', 'kafka'],
          audit: ['postgres', 'kafka', ...ch, 's3'],
          'export-worker': ['postgres', ...ch, 's3'],
          migrate: ['postgres', ...ch],
        };
        for (const [name, labels] of Object.entries(callers()).filter(([n]) => n !== 'redis')) {
          for (const [dep, [target, port]] of Object.entries(deps)) {
            const allowed = 'ip' in target ? egressAllowed(objs(), labels, target as Endpoint, port) : connectionAllowed(objs(), labels, target as Labels, port);
            expect([name, dep, allowed]).toEqual([name, dep, uses[name]!.includes(dep)]);
          }
          // DNS for everyone.
          expect(egressAllowed(objs(), labels, kubeDns, 53, 'UDP')).toBe(true);
          // Nothing else on the internet.
          expect(egressAllowed(objs(), labels, outside, 80)).toBe(false);
        }
      });

      if (overlay === 'prod') {
        it('let no app send to ClickHouse\'s plain ports (8123, 9000) in prod, by its own egress rules alone; the backup job only 9440', () => {
          const ports = [8123, 8443, 9000, 9440];
          const open = (labels: Labels) => ports.filter((port) => egressAllowed(objs(), labels, { pod: clickhouse }, port));
          for (const [name, labels] of Object.entries(callers())) {
            expect([name, open(labels)]).toEqual([name, ['audit', 'export-worker', 'migrate'].includes(name) ? [8443] : []]);
          }
          const backup = podTemplate(find(objs(), 'CronJob', 'clickhouse-backup')).metadata.labels;
          expect(open(backup)).toEqual([9440]);
          // and ClickHouse's Service offers the TLS ports only
          const chi = find(objs(), 'ClickHouseInstallation', 'secsvc').spec;
          const service = chi.templates.serviceTemplates.find((t: { name: string }) => t.name === chi.defaults.templates.serviceTemplate);
          expect(service.spec.ports.map((p: { port: number }) => p.port).sort()).toEqual([8443, 9440]);
        });
      }

      it('let the metrics scraper reach the admin ports from the monitoring namespace only', () => {
        for (const name of APPS) {
          expect(ingressAllowed(objs(), app(name), monitoring, ADMIN[name]!)).toBe(true);
          // Not from the apps themselves (metrics could tell them about each other's traffic).
          for (const caller of APPS) expect([caller, name, connectionAllowed(objs(), app(caller), app(name), ADMIN[name]!)]).toEqual([caller, name, false]);
        }
      });

      it('would have let the gateway reach Postgres without the default deny (the evaluator is not vacuous)', () => {
        const withoutDeny = objs().filter((o) => !(o.kind === 'NetworkPolicy' && ['default-deny-all', 'allow-dns', 'gateway', 'postgres'].includes(o.metadata.name)));
        expect(connectionAllowed(withoutDeny, app('gateway'), postgres, 5432)).toBe(true);
        expect(connectionAllowed(objs(), app('gateway'), postgres, 5432)).toBe(false);
      });
    });
  });
}
