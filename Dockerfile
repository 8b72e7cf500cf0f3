# syntax=docker/dockerfile:1
#
# One image for every Tracehouse app; APP picks which one runs:
#   docker build -t tracehouse-full .                                  # default target: every app
#   docker build --target slim -t tracehouse .                         # every app but control-plane/standalone
#   docker run -e APP=ingest ... tracehouse                            # APP can be overridden at run time
# Apps: gateway ingest query control-plane export-worker audit agent-server standalone.
#
# Targets:
#   slim     node runtime only. Enough for gateway, ingest, query, export-worker, audit and agent-server.
#   full     (default, the last stage) slim + git, a C/C++ toolchain, python3 and pnpm (corepack). The
#            control plane's local driver (in the control-plane and standalone apps) clones sources and runs
#            the deployments' install/build commands (npm ci, yarn, pnpm, node-gyp builds) inside the container.
# Both hold the compiled code of all apps (dist/), so the stages before them are shared in the build cache.
#
# Platform: linux/amd64. package-lock.json lists chDB's and swc's native packages for linux-x64 only.

ARG NODE_IMAGE=node:20-bookworm-slim
ARG MAVEN_IMAGE=maven:3-eclipse-temurin-17

# --- otel-proto: the official OTLP .proto files from Maven Central (io.opentelemetry.proto:opentelemetry-proto) --
# The ingest app's /otel/v1/traces decodes protobuf bodies with them. The Node stages have no mvn, so the
# repository's own fetch script runs here and the result (.cache/otel-proto) is copied into the build stage.
FROM ${MAVEN_IMAGE} AS otel-proto
WORKDIR /src
COPY scripts/otel/fetch-proto.sh scripts/otel/fetch-proto.sh
RUN --mount=type=cache,target=/root/.m2 \
    bash scripts/otel/fetch-proto.sh \
 && test -f .cache/otel-proto/opentelemetry/proto/collector/trace/v1/trace_service.proto

# --- deps: production + dev dependencies, from the lockfile only (cached until it changes) ---------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
ENV CI=true \
    NX_DAEMON=false \
    NX_NO_CLOUD=true \
    npm_config_update_notifier=false
COPY package.json package-lock.json ./
# `npm install`, not `npm ci`: the lock file (written by npm 11) leaves out other platforms' optional
# native packages (@swc/core-darwin-*, @chdb/lib-darwin-*, ...) and `npm ci` refuses it as "not in sync".
# The lock still pins every version installed here (scripts/ensure-deps.js does the same).
RUN --mount=type=cache,target=/root/.npm \
    npm install --no-audit --no-fund \
 && test -d node_modules/@chdb/lib-linux-x64-gnu

# --- build: compile with swc (npm run build -> dist/), then drop dev dependencies ---------------------------
FROM deps AS build
COPY . .
# scripts/copy-assets.js (part of `npm run build`) copies .cache/otel-proto into dist next to the OTLP decoder.
COPY --from=otel-proto /src/.cache/otel-proto ./.cache/otel-proto
RUN npm run build \
 && npm run build:web \
 && test -f dist/web/index.html \
 && npm prune --omit=dev --no-audit --no-fund \
 && test -f dist/apps/gateway/src/main.js \
 && test -f dist/apps/agent-server/src/main.js \
 && test -f dist/apps/audit/src/verify.js \
 && test -d dist/libs/clickhouse/src/migrations \
 && test -f dist/libs/clickhouse/src/migrations/0001_runs.sql \
 && test -f dist/libs/ingest/src/otel/proto/opentelemetry/proto/collector/trace/v1/trace_service.proto \
 && test -f dist/libs/ingest/src/otel/proto/opentelemetry/proto/trace/v1/trace.proto \
 && test -d node_modules/@langchain/langgraph \
 && test -d node_modules/langsmith

# --- slim: the runtime every app but the control plane needs ------------------------------------------------
FROM ${NODE_IMAGE} AS slim
# tini is PID 1: forwards SIGTERM to node (graceful drain) and reaps children (the standalone app's
# embedded PostgreSQL processes, the control plane's agent servers and build commands).
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production \
    NODE_OPTIONS="--enable-source-maps --max-semi-space-size=128" \
    HOST=0.0.0.0 \
    DATA_DIR=/data
# Code is owned by root and read-only to the app user; only /data (standalone's DATA_DIR, the control
# plane's builds) is writable.
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/scripts/run.js ./scripts/run.js
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]

ARG APP=gateway
ENV APP=${APP}
# Default ports: gateway 8080, ingest 8081, query 8082, control-plane 8083, export-worker 8084,
# audit 8085, agent-server 8086, standalone 1984 (PORT overrides).
EXPOSE 8080 8081 8082 8083 8084 8085 8086 1984

# The image's own "node" user (uid 1000), not root: PostgreSQL (standalone) refuses to run as root anyway.
USER node

HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "const d={gateway:8080,ingest:8081,query:8082,'control-plane':8083,'export-worker':8084,audit:8085,'agent-server':8086,standalone:1984};const p=process.env.PORT||d[process.env.APP]||8080;fetch('http://127.0.0.1:'+p+'/health/live',{signal:AbortSignal.timeout(4000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["/bin/sh", "-c", "exec node scripts/run.js \"$APP\""]

# --- full (default): slim + what the control plane's local driver runs --------------------------------------
# git (git_host sources: `git clone`, `git rev-parse`), make/g++/python3 (node-gyp builds of a deployment's
# native dependencies), pnpm through corepack (yarn 1 and npm come with the Node image). Tarballs are unpacked
# in process (the `tar` package). bun lock files are not supported in this image.
# bubblewrap: the sandbox every build command, clone and agent server runs in (AGENT_SANDBOX=bwrap, the default);
# it needs user namespaces in the container (docker-compose.yml: security_opt). Sandboxed code gets only LANG and
# TZ from the control plane, with its own PATH, HOME (in its revision's folder) and TMPDIR.
FROM slim AS full
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends git make g++ python3 bubblewrap \
 && rm -rf /var/lib/apt/lists/* \
 && corepack enable pnpm \
 && git --version \
 && command -v make g++ python3 pnpm npm tar bwrap
USER node
