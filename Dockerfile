# syntax=docker/dockerfile:1
#
# One image for every Tracehouse app; APP picks which one runs:
#   docker build --build-arg APP=gateway -t tracehouse-gateway .
#   docker run -e APP=ingest ... tracehouse-gateway        # APP can also be overridden at run time
# Apps: gateway ingest query control-plane export-worker audit agent-server standalone.
# The image holds the compiled code of all of them (dist/), so the stages before `runtime` are shared
# by every APP in the build cache.

ARG NODE_IMAGE=node:20-bookworm-slim

# --- deps: production + dev dependencies, from the lockfile only (cached until it changes) ---------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
ENV CI=true \
    NX_DAEMON=false \
    NX_NO_CLOUD=true \
    npm_config_update_notifier=false
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm \
    npm ci --no-audit --no-fund

# --- build: compile with swc (npm run build -> dist/), then drop dev dependencies ---------------------------
FROM deps AS build
COPY . .
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && test -f dist/apps/gateway/src/main.js \
 && test -d dist/libs/clickhouse/src/migrations

# --- runtime -----------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
# tini is PID 1: forwards SIGTERM to node (graceful drain) and reaps children (the standalone app's
# embedded PostgreSQL processes).
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production \
    NODE_OPTIONS=--enable-source-maps \
    HOST=0.0.0.0 \
    DATA_DIR=/data
# Code is owned by root and read-only to the app user; only /data (standalone's DATA_DIR) is writable.
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
