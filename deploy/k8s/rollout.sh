#!/usr/bin/env bash
# Rolls out an overlay in two phases, so the schema migrations run once, before any new app pod starts:
#   1. the objects labelled secsvc.io/rollout-phase=pre: the Namespace, the ConfigMap, every NetworkPolicy, the
#      dependencies (operator resources, Redis) and the migrations Job (the previous Job is deleted first: a
#      Job's pod template cannot be changed, and each release runs its own); then the gateway's SAML SP key
#      pair, the TLS-type Secret secsvc-saml-sp, made with openssl only when it does not exist yet (never
#      replaced: identity providers pin its certificate; an operator's own Secret made beforehand is kept);
#   2. once the Job has completed, everything else (the apps' Deployments, Services, PDBs, HPAs, the Ingress),
#      then waits for each Deployment's rollout.
# A failed or timed-out Job stops here, before the old pods are replaced; its logs are printed.
# Usage: deploy/k8s/rollout.sh <dev|prod|path to a kustomization> [kubectl args, e.g. --context prod]
set -euo pipefail

target="${1:?usage: rollout.sh <dev|prod|kustomization dir> [kubectl args]}"
shift
dir="$(cd "$(dirname "$0")" && pwd)/overlays/$target"
[ -d "$dir" ] || dir="$target"
kc() { kubectl "$@" "${KUBECTL_ARGS[@]}"; }
KUBECTL_ARGS=("$@")
MIGRATE_TIMEOUT="${MIGRATE_TIMEOUT:-30m}"

rendered="$(mktemp)"
trap 'rm -f "$rendered"' EXIT
kubectl kustomize "$dir" > "$rendered"
namespace="$(awk '/^kind: Namespace$/ {ns = 1} ns && /^  name: / {print $2; exit}' "$rendered")"
[ -n "$namespace" ] || { echo "rollout.sh: the overlay renders no Namespace" >&2; exit 1; }

echo "== phase pre: configuration, policies, dependencies, migrations Job ($namespace)"
kc -n "$namespace" delete job secsvc-migrate --ignore-not-found --wait=true
kc apply -f "$rendered" -l secsvc.io/rollout-phase=pre

echo "== SAML SP key pair: Secret secsvc-saml-sp"
if [ -n "$(kc -n "$namespace" get secret secsvc-saml-sp --ignore-not-found -o name)" ]; then
  echo "kept (identity providers pin its certificate; see deploy/k8s/README.md to replace it)"
else
  command -v openssl >/dev/null || { echo "rollout.sh: openssl is needed to make the Secret secsvc-saml-sp (or create it yourself: deploy/k8s/README.md)" >&2; exit 1; }
  # The certificate names the public host (ISSUER). Self-signed on purpose: IdPs pin the SP certificate from
  # its metadata rather than checking a CA; valid 10 years.
  issuer="$(awk '/^  ISSUER: / {print $2; exit}' "$rendered")"
  host="${issuer#*://}"
  host="${host%%[:/]*}"
  keys="$(mktemp -d)"
  trap 'rm -f "$rendered"; rm -rf "$keys"' EXIT
  if ! out="$(umask 077 && openssl req -x509 -newkey rsa:3072 -sha256 -days 3650 -nodes -subj "/CN=${host:-secsvc}" \
    -addext "basicConstraints=critical,CA:FALSE" -addext "keyUsage=critical,digitalSignature,keyEncipherment" \
    -keyout "$keys/tls.key" -out "$keys/tls.crt" 2>&1)"; then
    echo "rollout.sh: openssl failed: $out" >&2
    exit 1
  fi
  # `create` never overwrites: if another rollout made the Secret meanwhile, this fails and nothing changes.
  kc -n "$namespace" create secret tls secsvc-saml-sp --cert="$keys/tls.crt" --key="$keys/tls.key"
  rm -rf "$keys"
  echo "created (CN=${host:-secsvc}); give identity providers the SP metadata (GET /v1/sso/saml/{id}/metadata)"
fi

echo "== waiting for the migrations Job (at most $MIGRATE_TIMEOUT)"
if ! kc -n "$namespace" wait --for=condition=complete job/secsvc-migrate --timeout="$MIGRATE_TIMEOUT"; then
  echo "rollout.sh: the migrations Job did not complete; nothing else was changed. Its logs:" >&2
  kc -n "$namespace" logs job/secsvc-migrate --all-containers --prefix --tail=200 >&2 || true
  exit 1
fi

echo "== phase main: apps"
kc apply -f "$rendered"
for d in gateway identity policy audit export-worker; do
  kc -n "$namespace" rollout status "deployment/$d" --timeout=10m
done
echo "== rolled out $target to $namespace"
