# syntax=docker/dockerfile:1
# One multi-stage build for every app image. Each app is a target of the same runtime stage, differing only
# in its command:
#   docker build --target gateway -t secsvc/gateway:0.1.0 .      (likewise identity, policy, audit, export-worker)
# The manifests in deploy/k8s also name the command, so any of the images runs any app.
# No Docker engine exists on the machines this repository is developed and tested on: this file is checked
# statically (deploy/test/test/dockerfile.test.ts), never built there.

ARG NODE_IMAGE=node:20.20.2-bookworm-slim

# ---- build: install with the lock file, compile every project, then drop the dev dependencies ----
FROM ${NODE_IMAGE} AS build
# The npm the lock file and package.json "allowScripts" are made for (node 20 images ship npm 10).
ARG NPM_VERSION=11.19.1
ENV CI=true NX_DAEMON=false NX_NO_CLOUD=true NX_SKIP_NX_CACHE=true
WORKDIR /src
RUN npm install --global --no-audit --no-fund "npm@${NPM_VERSION}"
# Manifests first, so the dependency layer is rebuilt only when one of them changes.
COPY package.json package-lock.json ./
COPY apps/audit/package.json apps/audit/
COPY apps/export-worker/package.json apps/export-worker/
COPY apps/gateway/package.json apps/gateway/
COPY apps/gateway-e2e/package.json apps/gateway-e2e/
COPY apps/identity/package.json apps/identity/
COPY apps/policy/package.json apps/policy/
COPY libs/audit-store/package.json libs/audit-store/
COPY libs/client/package.json libs/client/
COPY libs/proto/package.json libs/proto/
COPY libs/shared/package.json libs/shared/
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

# ---- runtime: compiled code, production dependencies and runtime data only; owned by root, run as 10001 ----
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
RUN groupadd --system --gid 10001 secsvc \
  && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin secsvc
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/libs/shared/package.json libs/shared/
COPY --from=build /src/libs/shared/dist libs/shared/dist
COPY --from=build /src/libs/proto/package.json libs/proto/
COPY --from=build /src/libs/proto/dist libs/proto/dist
COPY --from=build /src/libs/proto/proto libs/proto/proto
COPY --from=build /src/libs/proto/descriptors libs/proto/descriptors
COPY --from=build /src/libs/audit-store/package.json libs/audit-store/
COPY --from=build /src/libs/audit-store/dist libs/audit-store/dist
COPY --from=build /src/libs/audit-store/migrations libs/audit-store/migrations
COPY --from=build /src/apps/gateway/package.json apps/gateway/
COPY --from=build /src/apps/gateway/dist apps/gateway/dist
COPY --from=build /src/apps/identity/package.json apps/identity/
COPY --from=build /src/apps/identity/dist apps/identity/dist
COPY --from=build /src/apps/identity/migrations apps/identity/migrations
COPY --from=build /src/apps/policy/package.json apps/policy/
COPY --from=build /src/apps/policy/dist apps/policy/dist
COPY --from=build /src/apps/policy/migrations apps/policy/migrations
COPY --from=build /src/apps/policy/rego/policy.wasm apps/policy/rego/policy.wasm
COPY --from=build /src/apps/audit/package.json apps/audit/
COPY --from=build /src/apps/audit/dist apps/audit/dist
COPY --from=build /src/apps/export-worker/package.json apps/export-worker/
COPY --from=build /src/apps/export-worker/dist apps/export-worker/dist
USER 10001:10001
# The processes drain and exit 0 on SIGTERM (the orchestrator's stop signal).
STOPSIGNAL SIGTERM

FROM runtime AS gateway
EXPOSE 8080 9100
CMD ["node", "apps/gateway/dist/main.js"]

FROM runtime AS identity
EXPOSE 50051 9101
CMD ["node", "apps/identity/dist/main.js"]

FROM runtime AS policy
EXPOSE 50052 9102
CMD ["node", "apps/policy/dist/main.js"]

FROM runtime AS audit
EXPOSE 50053 9103
CMD ["node", "apps/audit/dist/main.js"]

FROM runtime AS export-worker
EXPOSE 9104
CMD ["node", "apps/export-worker/dist/main.js"]
