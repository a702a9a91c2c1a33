# syntax=docker/dockerfile:1
# One image per app, holding only what that app loads: its own production dependency tree, its compiled code,
# the compiled code of the libraries its package.json depends on, and their runtime files (migrations, protos);
# the gateway's also carries the files it serves (the admin console's build, apps/console/dist).
#   docker build --target gateway -t secsvc/gateway:0.1.0 .      (likewise identity, policy, audit, export-worker)
# The images are not interchangeable: each runs its own app only (deploy/k8s names the image of each command).
# No Docker engine exists on the machines this repository is developed and tested on: this file is checked
# statically (deploy/test/test/dockerfile.test.ts), never built there.

# Node 24 LTS ("Krypton"), Debian 12 slim; package.json "engines" (>=20.19 <25) accepts Node 20, 22 and 24.
ARG NODE_IMAGE=node:24.21.0-bookworm-slim

# ---- npm: the npm the lock file and package.json "allowScripts" are made for ----
FROM ${NODE_IMAGE} AS npm
ARG NPM_VERSION=11.19.1
RUN npm install --global --no-audit --no-fund "npm@${NPM_VERSION}"

# ---- manifests: the lock file and every workspace's package.json (npm ci checks the lock against all of them) ----
FROM npm AS manifests
WORKDIR /src
COPY package.json package-lock.json ./
COPY apps/audit/package.json apps/audit/
COPY apps/console/package.json apps/console/
COPY apps/export-worker/package.json apps/export-worker/
COPY apps/gateway/package.json apps/gateway/
COPY apps/gateway-e2e/package.json apps/gateway-e2e/
COPY apps/identity/package.json apps/identity/
COPY apps/policy/package.json apps/policy/
COPY libs/audit-store/package.json libs/audit-store/
COPY libs/dev/package.json libs/dev/
COPY libs/client/package.json libs/client/
COPY libs/proto/package.json libs/proto/
COPY libs/shared/package.json libs/shared/

# ---- build: every dependency, dev ones included, then every project compiled ----
FROM manifests AS build
ENV CI=true NX_DAEMON=false NX_NO_CLOUD=true NX_SKIP_NX_CACHE=true
RUN --mount=type=cache,target=/root/.npm npm ci --no-audit --no-fund
COPY . .
RUN npm run build

# ---- deps-<app>: the production dependencies of one app, from the manifests alone ----
# `npm ci --workspace @secsvc/<app>` installs only what that workspace reaches through its package.json
# "dependencies" (and those of the libraries it depends on): not the root's, not the other apps'. --omit=dev
# leaves out the dev dependencies; --omit=optional leaves out chdb (the embedded ClickHouse of the local profile,
# an optional dependency of libs/audit-store: the images run the distributed profile against a ClickHouse
# server, CLICKHOUSE_URL) and pg-cloudflare (Cloudflare Workers only); --ignore-scripts: no production package
# needs an install script. The workspaces are links in node_modules/@secsvc (../../apps/<app>,
# ../../libs/<lib>) that the app's stage fills with their build output. A package npm nested under a workspace
# folder would not reach the image, so that fails the build.
# Each is a stage of its own, cached until a manifest or the lock file changes, built only for its target.
FROM manifests AS deps-gateway
RUN --mount=type=cache,target=/root/.npm npm ci --workspace @secsvc/gateway --omit=dev --omit=optional --ignore-scripts --prefer-offline --no-audit --no-fund \
  && if find apps libs -name node_modules | grep .; then echo "nested node_modules: not copied into the image" >&2; exit 1; fi

FROM manifests AS deps-identity
RUN --mount=type=cache,target=/root/.npm npm ci --workspace @secsvc/identity --omit=dev --omit=optional --ignore-scripts --prefer-offline --no-audit --no-fund \
  && if find apps libs -name node_modules | grep .; then echo "nested node_modules: not copied into the image" >&2; exit 1; fi

FROM manifests AS deps-policy
RUN --mount=type=cache,target=/root/.npm npm ci --workspace @secsvc/policy --omit=dev --omit=optional --ignore-scripts --prefer-offline --no-audit --no-fund \
  && if find apps libs -name node_modules | grep .; then echo "nested node_modules: not copied into the image" >&2; exit 1; fi

FROM manifests AS deps-audit
RUN --mount=type=cache,target=/root/.npm npm ci --workspace @secsvc/audit --omit=dev --omit=optional --ignore-scripts --prefer-offline --no-audit --no-fund \
  && if find apps libs -name node_modules | grep .; then echo "nested node_modules: not copied into the image" >&2; exit 1; fi

FROM manifests AS deps-export-worker
RUN --mount=type=cache,target=/root/.npm npm ci --workspace @secsvc/export-worker --omit=dev --omit=optional --ignore-scripts --prefer-offline --no-audit --no-fund \
  && if find apps libs -name node_modules | grep .; then echo "nested node_modules: not copied into the image" >&2; exit 1; fi

# ---- runtime: what every app image starts from: Node and the unprivileged user, nothing of the apps ----
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
RUN groupadd --system --gid 10001 secsvc \
  && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin secsvc
# The processes drain and exit 0 on SIGTERM (the orchestrator's stop signal).
STOPSIGNAL SIGTERM

# ---- one target per app: its dependency tree (changes least, so first), its libraries, then itself ----
# Files are owned by root and only readable by the user 10001, which is set last.

FROM runtime AS gateway
COPY --from=deps-gateway /src/node_modules node_modules
COPY --from=build /src/libs/proto/package.json libs/proto/
COPY --from=build /src/libs/proto/dist libs/proto/dist
COPY --from=build /src/libs/proto/proto libs/proto/proto
COPY --from=build /src/libs/proto/descriptors libs/proto/descriptors
COPY --from=build /src/libs/shared/package.json libs/shared/
COPY --from=build /src/libs/shared/dist libs/shared/dist
COPY --from=build /src/apps/gateway/package.json apps/gateway/
COPY --from=build /src/apps/gateway/dist apps/gateway/dist
# The admin console's static build, served at /console: CONSOLE_DIR's default is this path beside the gateway.
COPY --from=build /src/apps/console/dist apps/console/dist
USER 10001:10001
EXPOSE 8080 9100
CMD ["node", "apps/gateway/dist/main.js"]

FROM runtime AS identity
COPY --from=deps-identity /src/node_modules node_modules
COPY --from=build /src/libs/proto/package.json libs/proto/
COPY --from=build /src/libs/proto/dist libs/proto/dist
COPY --from=build /src/libs/proto/proto libs/proto/proto
COPY --from=build /src/libs/proto/descriptors libs/proto/descriptors
COPY --from=build /src/libs/shared/package.json libs/shared/
COPY --from=build /src/libs/shared/dist libs/shared/dist
COPY --from=build /src/apps/identity/package.json apps/identity/
COPY --from=build /src/apps/identity/dist apps/identity/dist
COPY --from=build /src/apps/identity/migrations apps/identity/migrations
USER 10001:10001
EXPOSE 50051 9101
CMD ["node", "apps/identity/dist/main.js"]

FROM runtime AS policy
COPY --from=deps-policy /src/node_modules node_modules
COPY --from=build /src/libs/proto/package.json libs/proto/
COPY --from=build /src/libs/proto/dist libs/proto/dist
COPY --from=build /src/libs/proto/proto libs/proto/proto
COPY --from=build /src/libs/proto/descriptors libs/proto/descriptors
COPY --from=build /src/libs/shared/package.json libs/shared/
COPY --from=build /src/libs/shared/dist libs/shared/dist
COPY --from=build /src/apps/policy/package.json apps/policy/
COPY --from=build /src/apps/policy/dist apps/policy/dist
COPY --from=build /src/apps/policy/migrations apps/policy/migrations
COPY --from=build /src/apps/policy/rego/policy.wasm apps/policy/rego/policy.wasm
USER 10001:10001
EXPOSE 50052 9102
CMD ["node", "apps/policy/dist/main.js"]

FROM runtime AS audit
COPY --from=deps-audit /src/node_modules node_modules
COPY --from=build /src/libs/proto/package.json libs/proto/
COPY --from=build /src/libs/proto/dist libs/proto/dist
COPY --from=build /src/libs/proto/proto libs/proto/proto
COPY --from=build /src/libs/proto/descriptors libs/proto/descriptors
COPY --from=build /src/libs/shared/package.json libs/shared/
COPY --from=build /src/libs/shared/dist libs/shared/dist
COPY --from=build /src/libs/audit-store/package.json libs/audit-store/
COPY --from=build /src/libs/audit-store/dist libs/audit-store/dist
COPY --from=build /src/libs/audit-store/migrations libs/audit-store/migrations
COPY --from=build /src/apps/audit/package.json apps/audit/
COPY --from=build /src/apps/audit/dist apps/audit/dist
USER 10001:10001
EXPOSE 50053 9103
CMD ["node", "apps/audit/dist/main.js"]

FROM runtime AS export-worker
COPY --from=deps-export-worker /src/node_modules node_modules
COPY --from=build /src/libs/proto/package.json libs/proto/
COPY --from=build /src/libs/proto/dist libs/proto/dist
COPY --from=build /src/libs/proto/proto libs/proto/proto
COPY --from=build /src/libs/proto/descriptors libs/proto/descriptors
COPY --from=build /src/libs/shared/package.json libs/shared/
COPY --from=build /src/libs/shared/dist libs/shared/dist
COPY --from=build /src/libs/audit-store/package.json libs/audit-store/
COPY --from=build /src/libs/audit-store/dist libs/audit-store/dist
COPY --from=build /src/libs/audit-store/migrations libs/audit-store/migrations
COPY --from=build /src/apps/export-worker/package.json apps/export-worker/
COPY --from=build /src/apps/export-worker/dist apps/export-worker/dist
USER 10001:10001
EXPOSE 9104
CMD ["node", "apps/export-worker/dist/main.js"]
