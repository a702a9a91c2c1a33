// Writes the JSON schemas of the operators' custom resources that deploy/k8s uses into
// deploy/k8s/schemas/crds/<group>/<kind>_<version>.json (kubeconform's
// `{{ .Group }}/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json` layout), for offline validation.
// Source: the datreeio/CRDs-catalog repository, whose files are the CRDs' published openAPIV3Schema converted to
// JSON schema by kubeconform's openapi2jsonschema.py (commit 7b1e26ef, August 2026: prometheus-operator 0.89,
// cert-manager, CloudNativePG with ScheduledBackup and the barman-cloud plugin's ObjectStore, KEDA 2.x, Strimzi
// kafka.strimzi.io/v1, Altinity clickhouse-operator). Made strict here like the Kubernetes ones: descriptions
// dropped, and every object schema that lists its properties and neither declares additionalProperties nor
// x-kubernetes-preserve-unknown-fields gets `additionalProperties: false` (the API server would silently prune
// an unknown field, so a typo would go unnoticed; here it is an error).
//
//   git clone https://github.com/datreeio/CRDs-catalog /tmp/crds   (then git -C /tmp/crds checkout 7b1e26ef)
//   node deploy/test/scripts/vendor-crd-schemas.mjs /tmp/crds
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** [group, file stem in the catalog (kind lower-cased, version)] of every custom resource the manifests use. */
export const CRDS = [
  ['monitoring.coreos.com', 'podmonitor_v1'],
  ['monitoring.coreos.com', 'prometheusrule_v1'],
  ['cert-manager.io', 'issuer_v1'],
  ['cert-manager.io', 'certificate_v1'],
  ['postgresql.cnpg.io', 'cluster_v1'],
  ['postgresql.cnpg.io', 'scheduledbackup_v1'],
  ['barmancloud.cnpg.io', 'objectstore_v1'],
  ['keda.sh', 'scaledobject_v1alpha1'],
  ['kafka.strimzi.io', 'kafka_v1'],
  ['kafka.strimzi.io', 'kafkanodepool_v1'],
  ['kafka.strimzi.io', 'kafkatopic_v1'],
  ['kafka.strimzi.io', 'kafkauser_v1'],
  ['clickhouse.altinity.com', 'clickhouseinstallation_v1'],
];

/** Drops descriptions and closes every object schema that lists its properties (see the top of this file). */
export function strict(node) {
  if (Array.isArray(node)) return node.map(strict);
  if (node === null || typeof node !== 'object') return node;
  const copy = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'description' && typeof value === 'string') continue;
    // `properties` maps names to schemas: its keys are field names, never keywords.
    copy[key] = key === 'properties' ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, strict(v)])) : strict(value);
  }
  if (copy.properties && !('additionalProperties' in copy) && copy['x-kubernetes-preserve-unknown-fields'] !== true) copy.additionalProperties = false;
  return copy;
}

function main() {
  const [catalog] = process.argv.slice(2);
  if (!catalog) {
    process.stderr.write('usage: vendor-crd-schemas.mjs <CRDs-catalog checkout>\n');
    process.exit(2);
  }
  const here = path.dirname(fileURLToPath(import.meta.url));
  const out = path.join(here, '..', '..', 'k8s', 'schemas', 'crds');
  rmSync(out, { recursive: true, force: true });
  for (const [group, stem] of CRDS) {
    const schema = strict(JSON.parse(readFileSync(path.join(catalog, group, `${stem}.json`), 'utf8')));
    // metadata is checked by the API server, not by the CRD's schema; leave it open as the catalog does.
    mkdirSync(path.join(out, group), { recursive: true });
    writeFileSync(path.join(out, group, `${stem}.json`), JSON.stringify(schema) + '\n');
  }
  process.stdout.write(`wrote ${CRDS.length} schemas to ${path.relative(process.cwd(), out)}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
