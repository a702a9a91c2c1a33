/**
 * Every rendered overlay, alone and with each component (and the base, the dependencies and the monitoring
 * alone), validates OFFLINE against the JSON schemas vendored in deploy/k8s/schemas (strict: unknown fields are
 * errors): Kubernetes' own kinds and the operators' custom resources alike. Nothing is skipped.
 */
import { build, CRD_SCHEMA_LOCATION, describeWithTools, KUBERNETES_VERSION, RENDERINGS, run, SCHEMA_LOCATION, tools } from './support/tools';

interface Result {
  filename: string;
  kind: string;
  name: string;
  version: string;
  status: 'statusValid' | 'statusInvalid' | 'statusError' | 'statusSkipped' | 'statusEmpty';
  msg: string;
}

function kubeconform(yamlText: string): { status: number | null; resources: Result[]; stderr: string } {
  const res = run(
    tools.kubeconform!,
    [
      '-strict',
      '-kubernetes-version',
      KUBERNETES_VERSION,
      // Only the vendored schemas: no default (remote) location, so nothing is fetched.
      '-schema-location',
      SCHEMA_LOCATION,
      '-schema-location',
      CRD_SCHEMA_LOCATION,
      '-output',
      'json',
      '-verbose',
      '-',
    ],
    yamlText,
  );
  const parsed = JSON.parse(res.stdout || '{"resources":[]}') as { resources: Result[] | null };
  return { status: res.status, resources: parsed.resources ?? [], stderr: res.stderr };
}

describeWithTools('kubeconform against the vendored schemas', () => {
  it.each([...RENDERINGS.map((r) => r.spec), 'base', 'dependencies', 'monitoring'])('%s is valid', (dir) => {
    const text = build(dir);
    const { status, resources, stderr } = kubeconform(text);
    const bad = resources.filter((r) => r.status === 'statusInvalid' || r.status === 'statusError');
    expect(bad.map((r) => `${r.kind} ${r.name}: ${r.msg}`)).toEqual([]);
    expect(stderr).toBe('');
    expect(status).toBe(0);
    // Every object was validated; the count matches what kustomize rendered.
    const documents = text.split(/^---$/m).filter((d) => d.trim()).length;
    expect(resources.filter((r) => r.status === 'statusValid').length).toBe(documents);
  });

  it('applies the custom resources\' schemas strictly: a misspelt field of an operator resource is an error', () => {
    const text = build('overlays/prod')
      .replace(/isWALArchiver: true/, 'isWalArchiver: true')
      .replace(/^( {2})dnsNames:$/m, '$1dnsName:')
      .replace(/^(\s+)for: 10m$/m, '$1for: ten minutes')
      .replace(/^( {2})minReplicaCount: 2$/m, '$1minReplicas: 2');
    const { status, resources } = kubeconform(text);
    expect(status).toBe(1);
    const bad = resources.filter((r) => r.status === 'statusInvalid').map((r) => `${r.kind}: ${r.msg}`);
    expect(bad.some((m) => /^Cluster: .*additional properties 'isWalArchiver' not allowed/.test(m))).toBe(true);
    expect(bad.some((m) => /^Certificate: .*additional properties 'dnsName' not allowed/.test(m))).toBe(true);
    expect(bad.some((m) => /^PrometheusRule: .*for/.test(m))).toBe(true);
    expect(bad.some((m) => /^ScaledObject: .*additional properties 'minReplicas' not allowed/.test(m))).toBe(true);
  });

  it('reports a wrong type and an unknown field (the schemas are really applied)', () => {
    const text = build('overlays/dev')
      .replace(/readOnlyRootFilesystem: true/, 'readOnlyRootFilesystem: "yes"')
      .replace(/^ {2}minReplicas: 1$/m, '  minReplica: 1');
    const { status, resources } = kubeconform(text);
    expect(status).toBe(1);
    const msgs = resources.filter((r) => r.status === 'statusInvalid').map((r) => r.msg);
    expect(msgs.some((m) => /readOnlyRootFilesystem.*got string/.test(m))).toBe(true);
    expect(msgs.some((m) => /additional properties 'minReplica' not allowed/.test(m))).toBe(true);
  });

  it('fails on a kind whose schema is not vendored (nothing is fetched from the network)', () => {
    const daemonSet = 'apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: x\nspec: {}\n';
    const { status, resources } = kubeconform(daemonSet);
    expect(status).toBe(1);
    expect(resources[0]).toMatchObject({ kind: 'DaemonSet', status: 'statusError' });
    expect(resources[0]!.msg).toMatch(/could not find schema/);
  });
});
