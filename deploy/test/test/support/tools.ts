/**
 * The kustomize and kubeconform binaries (scripts/install-tools.sh puts them in ~/.cache/secsvc/bin) and the
 * rendered overlays, parsed.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

export const rootDir = path.resolve(__dirname, '../../../..');
export const k8sDir = path.join(rootDir, 'deploy', 'k8s');
export const OVERLAYS = ['dev', 'prod'] as const;
export type Overlay = (typeof OVERLAYS)[number];

/** The Kubernetes version whose schemas are vendored in deploy/k8s/schemas. */
export const KUBERNETES_VERSION = '1.33.0';
export const SCHEMA_LOCATION = path.join(k8sDir, 'schemas', `v${KUBERNETES_VERSION}-standalone-strict`, '{{ .ResourceKind }}{{ .KindSuffix }}.json');
/** The operators' custom resources (deploy/test/scripts/vendor-crd-schemas.mjs), by API group. */
export const CRD_SCHEMA_LOCATION = path.join(k8sDir, 'schemas', 'crds', '{{ .Group }}', '{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json');

/** Finds a tool: $<NAME> (e.g. KUSTOMIZE), then the install-tools.sh folder, then PATH. */
export function findTool(name: 'kustomize' | 'kubeconform' | 'promtool'): string | undefined {
  const fromEnv = process.env[name.toUpperCase()];
  if (fromEnv) return fromEnv;
  const cached = path.join(process.env.SECSVC_TOOLS_DIR ?? path.join(os.homedir(), '.cache', 'secsvc', 'bin'), name);
  if (existsSync(cached)) return cached;
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir && existsSync(path.join(dir, name))) return path.join(dir, name);
  }
  return undefined;
}

export const tools = { kustomize: findTool('kustomize'), kubeconform: findTool('kubeconform') };
export const missingTools = Object.entries(tools)
  .filter(([, p]) => !p)
  .map(([n]) => n);

/**
 * `describe` when the tools are there. Without them the suite is skipped with the reason, except under CI=true,
 * where a missing tool is a failure (scripts/install-tools.sh must have installed it).
 */
export function describeWithTools(name: string, fn: () => void): void {
  if (missingTools.length === 0) return describe(name, fn);
  const reason = `${missingTools.join(' and ')} not found (run bash scripts/install-tools.sh)`;
  if (process.env.CI === 'true') {
    describe(name, () => {
      it('has its tools', () => {
        throw new Error(reason);
      });
    });
    return;
  }
  describe.skip(`${name} (skipped: ${reason})`, fn); // skip reason: kustomize/kubeconform are not installed and CI is not set (under CI=true the suite fails instead)
}

export function run(cmd: string, args: string[], input?: string, cwd?: string): { status: number | null; stdout: string; stderr: string } {
  const res = spawnSync(cmd, args, { input, cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, timeout: 120_000 });
  if (res.error) throw res.error;
  return { status: res.status, stdout: res.stdout, stderr: res.stderr };
}

/** The kustomize Components under deploy/k8s/components, which an operator adds to an overlay. */
export const COMPONENTS = ['saml-sp-rollover'] as const;

/** What the suites render: each overlay alone and with each component. */
export const RENDERINGS: { overlay: Overlay; spec: string }[] = OVERLAYS.flatMap((overlay) => [
  { overlay, spec: `overlays/${overlay}` },
  ...COMPONENTS.map((c) => ({ overlay, spec: `overlays/${overlay}+components/${c}` })),
]);

/**
 * Runs fn with a kustomization folder for `spec`: a folder under deploy/k8s ("overlays/dev"), or one with
 * components added, "overlays/dev+components/saml-sp-rollover", as an operator's overlay would
 * (`components: [...]`): a temporary kustomization, removed afterwards, that refers to them by relative paths
 * (kustomize refuses absolute ones).
 */
export function withKustomization<T>(spec: string, fn: (dir: string) => T): T {
  const [base, ...components] = spec.split('+');
  if (components.length === 0) return fn(path.join(k8sDir, base!));
  const dir = mkdtempSync(path.join(os.tmpdir(), 'secsvc-kustomization-'));
  try {
    const rel = (p: string) => path.relative(dir, path.join(k8sDir, p));
    const lines = ['apiVersion: kustomize.config.k8s.io/v1beta1', 'kind: Kustomization', 'resources:', `  - ${rel(base!)}`, 'components:', ...components.map((c) => `  - ${rel(c)}`)];
    writeFileSync(path.join(dir, 'kustomization.yaml'), `${lines.join('\n')}\n`);
    return fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `kustomize build` of a folder under deploy/k8s, optionally with components (see withKustomization), as YAML text. */
export function build(spec: string): string {
  const res = withKustomization(spec, (dir) => run(tools.kustomize!, ['build', dir]));
  if (res.status !== 0) throw new Error(`kustomize build ${spec} failed: ${res.stderr}`);
  return res.stdout;
}

/* eslint-disable @typescript-eslint/no-explicit-any -- rendered manifests are free-form; tests assert their fields */
export type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> }; [k: string]: any };
/* eslint-enable @typescript-eslint/no-explicit-any */

export function parse(yamlText: string): K8sObject[] {
  return parseAllDocuments(yamlText).map((doc) => {
    if (doc.errors.length > 0) throw new Error(doc.errors.map((e) => e.message).join('; '));
    return doc.toJSON() as K8sObject;
  });
}

const rendered = new Map<string, K8sObject[]>();
export function objects(dir: string): K8sObject[] {
  if (!rendered.has(dir)) rendered.set(dir, parse(build(dir)));
  return rendered.get(dir)!;
}

export const find = (objs: K8sObject[], kind: string, name: string): K8sObject => {
  const o = objs.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`no ${kind} ${name}`);
  return o;
};
