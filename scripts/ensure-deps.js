// Installs dependencies when node_modules is missing or older than package-lock.json, then builds.
'use strict';
const { execSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const root = path.resolve(__dirname, '..');

function run(cmd) {
  execSync(cmd, { cwd: root, stdio: 'inherit', env: { ...process.env, NX_DAEMON: 'false' } });
}

function ensureDeps() {
  const marker = path.join(root, 'node_modules', '.package-lock.json');
  const lock = path.join(root, 'package-lock.json');
  const stale = !fs.existsSync(marker) || fs.statSync(marker).mtimeMs < fs.statSync(lock).mtimeMs;
  if (stale) {
    // `npm install` rather than `npm ci`: npm 11 leaves other platforms' optional binaries out of the
    // lock file it writes and then refuses `npm ci` on that same lock. The lock still pins every version.
    process.stdout.write('Installing dependencies (npm install)...\n');
    run('npm install --no-audit --no-fund');
  }
}

function build() {
  // The OTLP .proto definitions /otel/v1/traces decodes with (Maven Central, cached in .cache/otel-proto).
  run('bash scripts/otel/fetch-proto.sh');
  run('npm run --silent build');
}

module.exports = { ensureDeps, build, run, root };
if (require.main === module) {
  ensureDeps();
  build();
}
