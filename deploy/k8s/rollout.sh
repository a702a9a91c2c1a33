#!/usr/bin/env bash
# Rolls out an overlay in two phases, so the schema migrations run once, before any new app pod starts:
#   1. the objects labelled secsvc.io/rollout-phase=pre: the Namespace, the ConfigMap, every NetworkPolicy, the
#      dependencies (operator resources, Redis) and the migrations Job (the previous Job is deleted first: a
#      Job's pod template cannot be changed, and each release runs its own); then the gateway's SAML SP key
#      pair, the TLS-type Secret secsvc-saml-sp, made with openssl only when it does not exist yet (never
#      replaced: identity providers pin its certificate; an operator's own Secret made beforehand is kept);
#   2. once the Job has completed, everything else (the apps' Deployments, Services, PDBs, HPAs, the Ingress),
#      then waits for each Deployment's rollout.
# A failed or timed-out Job stops here, before the old pods are replaced; its logs are printed. An overlay with the
# component saml-sp-rollover whose Secret secsvc-saml-sp-rollover does not exist stops before anything changes.
# Usage: deploy/k8s/rollout.sh <dev|prod|path to a kustomization> [kubectl args, e.g. --context prod]
#
# Sub-command: deploy/k8s/rollout.sh saml-sp-rollover <dev|prod|path> [kubectl args] makes a new SAML SP key
# pair into the Secret secsvc-saml-sp-rollover for a key change (deploy/k8s/README.md, "Rolling over the SAML SP
# key pair") and rolls nothing out. It never replaces that Secret (after the swap it holds the previous pair,
# which IdPs may still encrypt for) and needs the active one, secsvc-saml-sp.
set -euo pipefail

usage="usage: rollout.sh [saml-sp-rollover] <dev|prod|kustomization dir> [kubectl args]"
mode=rollout
if [ "${1:-}" = saml-sp-rollover ]; then
  mode=saml-sp-rollover
  shift
fi
target="${1:?$usage}"
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

secret_exists() { [ -n "$(kc -n "$namespace" get secret "$1" --ignore-not-found -o name)" ]; }

# Makes the TLS-type Secret $1 with a new RSA 3072 key and a self-signed SHA-256 certificate valid 10 years naming
# the public host (ISSUER). Self-signed on purpose: IdPs pin the SP certificate from its metadata rather than
# checking a CA. The key exists only in a 0700 temporary folder, deleted afterwards, and is never printed.
make_saml_sp_secret() {
  local name="$1" issuer host fingerprint out
  command -v openssl >/dev/null || { echo "rollout.sh: openssl is needed to make the Secret $name (or create it yourself: deploy/k8s/README.md)" >&2; exit 1; }
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
  fingerprint="$(openssl x509 -in "$keys/tls.crt" -noout -fingerprint -sha256)"
  # `create` never overwrites: if another rollout made the Secret meanwhile, this fails and nothing changes.
  kc -n "$namespace" create secret tls "$name" --cert="$keys/tls.crt" --key="$keys/tls.key"
  rm -rf "$keys"
  echo "created (CN=${host:-secsvc}; certificate ${fingerprint})"
}

if [ "$mode" = saml-sp-rollover ]; then
  echo "== SAML SP key rollover: a new pair in the Secret secsvc-saml-sp-rollover ($namespace)"
  if ! secret_exists secsvc-saml-sp; then
    echo "rollout.sh: no Secret secsvc-saml-sp in $namespace, so no active pair to roll over from (roll out first: rollout.sh $target)" >&2
    exit 1
  fi
  if secret_exists secsvc-saml-sp-rollover; then
    echo "rollout.sh: the Secret secsvc-saml-sp-rollover exists already and is never replaced (after a swap it holds the previous pair, which IdPs may still use); delete it once no gateway mounts it (deploy/k8s/README.md)" >&2
    exit 1
  fi
  make_saml_sp_secret secsvc-saml-sp-rollover
  echo "next: add the component ../../components/saml-sp-rollover to the overlay and roll it out (deploy/k8s/README.md)"
  exit 0
fi

# The component's volume is required: without its Secret the new gateway pods would wait in ContainerCreating.
if grep -q '^ *secretName: secsvc-saml-sp-rollover$' "$rendered" && ! secret_exists secsvc-saml-sp-rollover; then
  echo "rollout.sh: the overlay mounts the Secret secsvc-saml-sp-rollover (component saml-sp-rollover), which does not exist in $namespace; make it first: rollout.sh saml-sp-rollover $target. Nothing was changed." >&2
  exit 1
fi

echo "== phase pre: configuration, policies, dependencies, migrations Job ($namespace)"
kc -n "$namespace" delete job secsvc-migrate --ignore-not-found --wait=true
kc apply -f "$rendered" -l secsvc.io/rollout-phase=pre

echo "== SAML SP key pair: Secret secsvc-saml-sp"
if secret_exists secsvc-saml-sp; then
  echo "kept (identity providers pin its certificate; see deploy/k8s/README.md to replace it)"
else
  make_saml_sp_secret secsvc-saml-sp
  echo "give identity providers the SP metadata (GET /v1/sso/saml/{id}/metadata)"
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
