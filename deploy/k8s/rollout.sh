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
#
# Sub-command: deploy/k8s/rollout.sh saml-sp-swap <dev|prod|path> [kubectl args] is step 4 of that procedure: it
# swaps the data of secsvc-saml-sp and secsvc-saml-sp-rollover (the new pair becomes the active one), then restarts
# the gateway and waits for it. It refuses, changing nothing, unless both Secrets exist, each holds a key matching
# its certificate, the certificates differ and the overlay mounts the rollover Secret (component saml-sp-rollover).
set -euo pipefail

usage="usage: rollout.sh [saml-sp-rollover|saml-sp-swap] <dev|prod|kustomization dir> [kubectl args]"
mode=rollout
case "${1:-}" in
  saml-sp-rollover | saml-sp-swap) mode="$1"; shift ;;
esac
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
# Whether the overlay's gateway mounts the rollover pair (component saml-sp-rollover).
mounts_rollover() { grep -q '^ *secretName: secsvc-saml-sp-rollover$' "$rendered"; }

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

if [ "$mode" = saml-sp-swap ]; then
  echo "== SAML SP key swap: secsvc-saml-sp <-> secsvc-saml-sp-rollover ($namespace)"
  command -v openssl >/dev/null || { echo "rollout.sh: openssl is needed to check the two certificates; nothing was changed" >&2; exit 1; }
  if ! mounts_rollover; then
    echo "rollout.sh: the overlay does not mount secsvc-saml-sp-rollover (component saml-sp-rollover), so after a swap the gateway would no longer serve the previous pair; add the component and roll it out first (deploy/k8s/README.md). Nothing was changed." >&2
    exit 1
  fi
  for s in secsvc-saml-sp secsvc-saml-sp-rollover; do
    if ! secret_exists "$s"; then
      echo "rollout.sh: no Secret $s in $namespace; nothing to swap (make the rollover pair with: rollout.sh saml-sp-rollover $target). Nothing was changed." >&2
      exit 1
    fi
  done

  # Both pairs are read once into a 0700 folder (files 0600), which goes on every exit. Between the two replaces
  # the previous active pair exists only there: if the second replace fails, the exit trap looks at what
  # secsvc-saml-sp-rollover holds (a kubectl that failed may still have replaced it) and, unless it is swapped
  # already, puts the previous pair back into secsvc-saml-sp before the folder goes.
  umask 077
  keys="$(mktemp -d)"
  swap_state=reading
  on_swap_exit() {
    local status=$? now
    if [ "$swap_state" = half ]; then
      now="$(kc -n "$namespace" get secret secsvc-saml-sp-rollover -o 'jsonpath={.data.tls\.crt}' 2>/dev/null)" || now=unreadable
      if [ "$now" = "$active_crt" ]; then
        echo "rollout.sh: secsvc-saml-sp-rollover was replaced after all: the Secrets are swapped (active $rollover_fp), but the gateway was not restarted: kubectl -n $namespace rollout restart deployment/gateway" >&2
      elif [ "$now" = unreadable ]; then
        echo "rollout.sh: cannot read secsvc-saml-sp-rollover any more: either the Secrets are swapped or both hold the new pair ($rollover_fp) and the previous one ($active_fp) is lost; compare their fingerprints (deploy/k8s/README.md, step 4)" >&2
      else
        echo "rollout.sh: secsvc-saml-sp-rollover was not replaced; putting the previous pair back into secsvc-saml-sp" >&2
        if kc replace -f "$keys/restore.yaml" >&2; then
          echo "rollout.sh: restored: both Secrets hold their pairs as before; nothing was swapped and no gateway restarted" >&2
        else
          echo "rollout.sh: the restore failed too: both Secrets now hold the new pair and the previous one is lost; new gateway pods refuse to start (the rollover pair is the active one). See deploy/k8s/README.md, step 4." >&2
        fi
      fi
    fi
    rm -rf "$keys"
    rm -f "$rendered"
    [ "$status" -ne 0 ] || [ "$swap_state" != half ] || status=1
    exit "$status"
  }
  trap on_swap_exit EXIT
  trap 'exit 129' HUP
  trap 'exit 130' INT
  trap 'exit 143' TERM

  # One read per Secret, so its resourceVersion and data agree; into <prefix>_rv, _crt, _key (base64 as stored)
  # and _fp (the certificate's SHA-256 fingerprint). The values stay in shell variables and the folder, never in
  # a command's arguments or the output. (No associative arrays: macOS still ships bash 3.2.)
  read_pair() {
    local name="$1" prefix="$2" out rv crt key fp
    out="$(kc -n "$namespace" get secret "$name" -o 'jsonpath={.metadata.resourceVersion} {.data.tls\.crt} {.data.tls\.key}')"
    rv="${out%% *}"
    out="${out#* }"
    crt="${out%% *}"
    key="${out#* }"
    if [ -z "$rv" ] || [ -z "$crt" ] || [ -z "$key" ] || [ "$crt" = "$key" ]; then
      echo "rollout.sh: the Secret $name holds no tls.crt and tls.key; nothing was changed" >&2
      exit 1
    fi
    printf '%s' "$crt" | base64 -d > "$keys/$prefix.crt"
    printf '%s' "$key" | base64 -d > "$keys/$prefix.key"
    if ! fp="$(openssl x509 -in "$keys/$prefix.crt" -noout -fingerprint -sha256 2>/dev/null)" \
      || ! [ "$(openssl x509 -in "$keys/$prefix.crt" -noout -pubkey 2>/dev/null)" = "$(openssl pkey -in "$keys/$prefix.key" -pubout 2>/dev/null)" ]; then
      echo "rollout.sh: the Secret $name does not hold a PEM certificate and the private key matching it (the gateway would refuse to start); nothing was changed" >&2
      exit 1
    fi
    printf -v "${prefix}_rv" '%s' "$rv"
    printf -v "${prefix}_crt" '%s' "$crt"
    printf -v "${prefix}_key" '%s' "$key"
    printf -v "${prefix}_fp" '%s' "$fp"
  }
  read_pair secsvc-saml-sp active
  read_pair secsvc-saml-sp-rollover rollover
  if [ "$active_fp" = "$rollover_fp" ]; then
    echo "rollout.sh: secsvc-saml-sp and secsvc-saml-sp-rollover hold the same certificate ($active_fp); nothing to swap, nothing was changed" >&2
    exit 1
  fi

  # The Secret $1 holding the pair <prefix $2>; with $3, replaced only while still at that resourceVersion (kubectl
  # replace fails with a conflict if the Secret changed since it was read). printf is a builtin: no process sees it.
  manifest() {
    local crt="${2}_crt" key="${2}_key"
    printf 'apiVersion: v1\nkind: Secret\ntype: kubernetes.io/tls\nmetadata:\n  name: %s\n  namespace: %s\n' "$1" "$namespace"
    [ -z "${3:-}" ] || printf '  resourceVersion: "%s"\n' "$3"
    printf 'data:\n  tls.crt: %s\n  tls.key: %s\n' "${!crt}" "${!key}"
  }
  manifest secsvc-saml-sp rollover "$active_rv" > "$keys/active.yaml"
  manifest secsvc-saml-sp-rollover active "$rollover_rv" > "$keys/rollover.yaml"
  manifest secsvc-saml-sp active > "$keys/restore.yaml"
  # A signal waits until both replaces are done (or one failed): stopping between them would leave the state to
  # guesswork, and a replace that went through must not be taken for one that did not.
  pending=""
  trap 'pending=129' HUP
  trap 'pending=130' INT
  trap 'pending=143' TERM
  swap_state=replacing
  kc replace -f "$keys/active.yaml"
  swap_state=half
  kc replace -f "$keys/rollover.yaml"
  swap_state=swapped
  rm -rf "$keys"
  echo "swapped: active   secsvc-saml-sp          certificate $rollover_fp"
  echo "         rollover secsvc-saml-sp-rollover certificate $active_fp (the previous one)"
  if [ -n "$pending" ]; then
    echo "rollout.sh: stopped by a signal after the swap; the gateway was not restarted: kubectl -n $namespace rollout restart deployment/gateway" >&2
    exit "$pending"
  fi

  echo "== restarting the gateway (it reads the pairs at start only)"
  if ! kc -n "$namespace" rollout restart deployment/gateway || ! kc -n "$namespace" rollout status deployment/gateway --timeout=10m; then
    echo "rollout.sh: the Secrets are swapped, but the gateway's restart did not finish: pods not restarted still sign with the previous key; check and repeat: kubectl -n $namespace rollout restart deployment/gateway" >&2
    exit 1
  fi
  echo "next: once every IdP has read the metadata again, remove the component and the Secret secsvc-saml-sp-rollover (deploy/k8s/README.md, step 5)"
  exit 0
fi

# An overlay whose Namespace is labelled secsvc.io/require-image-digests=true (prod) rolls out only images pinned by
# digest: a tag can be moved to other bytes after review, a digest cannot.
if grep -q '^    secsvc.io/require-image-digests: "true"$' "$rendered"; then
  unpinned="$(sed -n 's/^[ -]*image: //p' "$rendered" | grep -v '@sha256:[0-9a-f]\{64\}$' | sort -u || true)"
  if [ -n "$unpinned" ]; then
    echo "rollout.sh: $target requires images pinned by digest; not pinned:" >&2
    echo "$unpinned" | sed 's/^/  /' >&2
    echo "Pin each pushed image first (deploy/k8s/README.md, \"Build the images\"): kustomize edit set image secsvc/<app>=<repository>:<version>@sha256:<digest>. Nothing was changed." >&2
    exit 1
  fi
fi

# The component's volume is required: without its Secret the new gateway pods would wait in ContainerCreating.
if mounts_rollover && ! secret_exists secsvc-saml-sp-rollover; then
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
