#!/usr/bin/env bash
# Builds Ory Hydra (the OAuth 2.0 peer of the benchmarks) once into ${SECSVC_TOOLS_DIR:-$HOME/.cache/secsvc/bin}
# from the Go module proxy; Go's module and build caches make a second run take seconds. Not part of npm test.
# `go install` ignores a dependency's `replace` directives, so Hydra's own replace of gobuffalo/pop is copied
# into a small tool module here.
set -euo pipefail
HYDRA_VERSION=v2.3.0
BIN="${SECSVC_TOOLS_DIR:-$HOME/.cache/secsvc/bin}"
if [ -x "$BIN/hydra" ] && [ "$(cat "$BIN/hydra.version" 2>/dev/null)" = "$HYDRA_VERSION" ]; then
  echo "hydra $HYDRA_VERSION: $BIN/hydra"
  exit 0
fi
mkdir -p "$BIN"
MOD="$(dirname "$BIN")/hydra-tool"
rm -rf "$MOD" && mkdir -p "$MOD"
cd "$MOD"
go mod init secsvc.local/hydra-tool >/dev/null 2>&1
go mod edit -replace github.com/gobuffalo/pop/v6=github.com/ory/pop/v6@v6.2.1-0.20241121111754-e5dfc0f3344b
go get -tool "github.com/ory/hydra/v2@$HYDRA_VERSION"
echo "building hydra $HYDRA_VERSION (a cold build takes several minutes)"
CGO_ENABLED=1 go build -tags sqlite,sqlite_omit_load_extension -o "$BIN/hydra" github.com/ory/hydra/v2
echo "$HYDRA_VERSION" > "$BIN/hydra.version"
echo "hydra $HYDRA_VERSION: $BIN/hydra"
