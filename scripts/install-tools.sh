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
