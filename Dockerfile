# syntax=docker/dockerfile:1
# One image per service, from this one file:
#
#   docker build --build-arg SERVICE=gateway -t fin-gateway .
#
# SERVICE is a folder under services/: gateway, news, stock-report, analysis, chat, jobs, portal, mcp. An image runs both
# roles of its product (<SERVICE>_ROLE=api|worker); the gateway image also carries the migration runner and the admin
# CLI (every image that uses the database carries the migration runner). Run-time files beside a package's dist/
# ship with it (packages/db/migrations, packages/ai/prompts, services/portal/static). Commands: docs/deployment.md.
#
# Stages: store (the pnpm store, from the lockfile alone: cached until the lockfile changes) → build (install,
# Prisma client, compile the service and the packages it uses, assemble the runtime tree with production
# dependencies only) → runtime (Node slim, non-root, read-only application files).
# infra/test/image.test.ts runs the build stage's steps outside Docker and starts the result.

ARG NODE_IMAGE=node:24-slim

FROM ${NODE_IMAGE} AS pnpm
# The version of package.json "packageManager".
RUN npm install --global --no-fund --no-audit --loglevel=error pnpm@10.34.9
ENV CI=true npm_config_store_dir=/pnpm/store

FROM pnpm AS store
WORKDIR /repo
COPY pnpm-lock.yaml pnpm-workspace.yaml ./
COPY patches ./patches
RUN pnpm fetch

FROM store AS build
COPY . .
RUN pnpm install --frozen-lockfile --offline
# Generation is WebAssembly and offline; the package script points the CLI's engine download at a placeholder.
RUN pnpm --filter @fin/db run generate
ARG SERVICE
RUN test -n "$SERVICE" && test -f "services/$SERVICE/package.json" \
  || { echo "--build-arg SERVICE=<folder under services/> is required" >&2; exit 1; }
# One tsc -b over the service's build config compiles it and every workspace package it references (as the root
# tsconfig.build.json does for all of them in `npm run build`).
RUN pnpm exec tsc -b "services/${SERVICE}/tsconfig.build.json"
RUN node infra/src/image/assemble.mjs "$SERVICE" /out

FROM ${NODE_IMAGE} AS runtime
# Nothing runs npm, npx, corepack or yarn in a service container: removed to shrink the image and what an
# attacker could use.
RUN rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack /opt/yarn-* \
  /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack /usr/local/bin/yarn /usr/local/bin/yarnpkg
ARG SERVICE
# What fin_build_info reports (docker build --build-arg FIN_VERSION=1.4.0 --build-arg FIN_COMMIT=$(git rev-parse
# HEAD)); unset, the metric falls back to the package version. Kubernetes overlays set FIN_VERSION per release.
ARG FIN_VERSION=""
ARG FIN_COMMIT=""
LABEL org.opencontainers.image.title="fin-${SERVICE}" \
  org.opencontainers.image.description="Financial Intelligence API: the ${SERVICE} service" \
  org.opencontainers.image.version="${FIN_VERSION}" \
  org.opencontainers.image.revision="${FIN_COMMIT}"
# HOST, METRICS_HOST: the services default to 127.0.0.1, which no one outside the container could reach. The
# metrics listener (METRICS_PORT) also answers GET /healthz: the HEALTHCHECK of worker roles, which have no API.
# NODE_OPTIONS (also what `npm start` and the benchmarks run the compiled services with, read from here): stack
# traces name the TypeScript sources; a young generation of at most 4 MB per semi-space
# (by default V8 lets the young generation grow to 64 MB) keeps each minor GC pause near 1 ms instead of 3-15 ms, which is what the tail
# latency of a busy service is made of (docs/benchmarks.md, "Choices made by measurement").
ENV NODE_ENV=production \
  HOST=0.0.0.0 \
  METRICS_HOST=0.0.0.0 \
  FIN_SERVICE=${SERVICE} \
  FIN_VERSION=${FIN_VERSION} \
  FIN_COMMIT=${FIN_COMMIT} \
  NODE_OPTIONS="--enable-source-maps --max-semi-space-size=4"
# Owned by root and not writable by the service's user; Kubernetes also mounts the root file system read-only.
COPY --from=build /out /app
WORKDIR /app/services/${SERVICE}
# Numeric, so Kubernetes' runAsNonRoot can verify it without an /etc/passwd entry.
USER 10001:10001
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 CMD ["node", "/app/bin/healthcheck.cjs"]
CMD ["node", "dist/main.js"]
