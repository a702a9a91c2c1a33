#!/usr/bin/env bash
# Installs the command-line tools the test suites use, once, into a cache outside the work tree
# (${SECSVC_TOOLS_DIR:-$HOME/.cache/secsvc/bin}); Go's own module and build caches make a rebuild fast.
set -euo pipefail
BIN="${SECSVC_TOOLS_DIR:-$HOME/.cache/secsvc/bin}"
mkdir -p "$BIN"

GRPCURL_VERSION=v1.9.3
# `go install` builds report no version, so a stamp file records which one is there.
if [ ! -x "$BIN/grpcurl" ] || [ "$(cat "$BIN/grpcurl.version" 2>/dev/null)" != "$GRPCURL_VERSION" ]; then
  echo "installing grpcurl $GRPCURL_VERSION into $BIN"
  GOBIN="$BIN" CGO_ENABLED=0 go install "github.com/fullstorydev/grpcurl/cmd/grpcurl@$GRPCURL_VERSION"
  echo "$GRPCURL_VERSION" > "$BIN/grpcurl.version"
fi
echo "grpcurl $GRPCURL_VERSION: $BIN/grpcurl"

OPA_VERSION=v1.22.2
# The opa CLI: `opa test`/`opa eval` for the policy tests and `opa build -t wasm` for apps/policy/rego/policy.wasm.
# Pure Go (CGO off); a cold build takes several minutes on 2 cores, a warm one seconds.
if [ ! -x "$BIN/opa" ] || [ "$(cat "$BIN/opa.version" 2>/dev/null)" != "$OPA_VERSION" ]; then
  echo "installing opa $OPA_VERSION into $BIN"
  GOBIN="$BIN" CGO_ENABLED=0 go install "github.com/open-policy-agent/opa@$OPA_VERSION"
  echo "$OPA_VERSION" > "$BIN/opa.version"
fi
echo "opa $OPA_VERSION: $BIN/opa"
