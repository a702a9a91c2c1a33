/**
 * Every rendered overlay, alone and with each component (and the base and dependencies alone), validates
 * OFFLINE against the Kubernetes JSON schemas vendored in deploy/k8s/schemas (strict: unknown fields are
 * errors). Only the operators' custom resources are skipped, and exactly those.
 */
import { build, describeWithTools, KUBERNETES_VERSION, OPERATOR_KINDS, RENDERINGS, run, SCHEMA_LOCATION, tools } from './support/tools';

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
      '-skip',
      OPERATOR_KINDS.join(','),
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
  it.each([...RENDERINGS.map((r) => r.spec), 'base', 'dependencies'])('%s is valid', (dir) => {
    const text = build(dir);
    const { status, resources, stderr } = kubeconform(text);
    const bad = resources.filter((r) => r.status === 'statusInvalid' || r.status === 'statusError');
    expect(bad.map((r) => `${r.kind} ${r.name}: ${r.msg}`)).toEqual([]);
    expect(stderr).toBe('');
    expect(status).toBe(0);
    const valid = resources.filter((r) => r.status === 'statusValid');
    const skipped = resources.filter((r) => r.status === 'statusSkipped');
    // Every object was either validated or is an operator resource; the count matches what kustomize rendered.
    const documents = text.split(/^---$/m).filter((d) => d.trim()).length;
    expect(valid.length + skipped.length).toBe(documents);
    expect(valid.length).toBeGreaterThan(0);
    for (const r of skipped) expect(OPERATOR_KINDS.map((k) => k.split('/').pop())).toContain(r.kind);
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
    const cronJob = 'apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: x\nspec:\n  schedule: "* * * * *"\n';
    const { status, resources } = kubeconform(cronJob);
    expect(status).toBe(1);
    expect(resources[0]).toMatchObject({ kind: 'CronJob', status: 'statusError' });
    expect(resources[0]!.msg).toMatch(/could not find schema/);
  });
});
