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
    // `npm ci`: exactly the lock's versions. npm 11's `npm install` drops other platforms' optional
    // binaries (chdb's) from the lock it writes, and `npm ci` then refuses that lock as out of sync: the
    // lock lists them by hand (version, os and cpu, no tarball: this machine's registry mirror lacks
    // them and they are never fetched here). If a later `npm install` dropped them again, install anyway.
    process.stdout.write('Installing dependencies (npm ci)...\n');
    try {
      run('npm ci --no-audit --no-fund');
    } catch {
      process.stdout.write('npm ci refused the lock file; installing with npm install instead...\n');
      run('npm install --no-audit --no-fund');
    }
  }
}

/**
 * bubblewrap: the control plane runs deployments' code only inside it (AGENT_SANDBOX), and its tests check that.
 * Installed from Debian's packages when missing and this runs as root; otherwise a clear error.
 */
function ensureSandboxTools() {
  if (process.platform !== 'linux') return;
  const has = (cmd) => {
    try {
      execSync(`command -v ${cmd}`, { stdio: 'ignore', shell: '/bin/sh' });
      return true;
    } catch {
      return false;
    }
  };
  if (has('bwrap')) return;
  if (process.getuid() !== 0 || !has('apt-get')) {
    throw new Error('bubblewrap (bwrap) is missing: install it (Debian/Ubuntu: apt-get install bubblewrap); deployments run only inside it');
  }
  process.stdout.write('Installing bubblewrap (apt-get install bubblewrap)...\n');
  try {
    run('apt-get install -y --no-install-recommends bubblewrap');
  } catch {
    run('apt-get update && apt-get install -y --no-install-recommends bubblewrap');
  }
}

function build() {
  // The OTLP .proto definitions /otel/v1/traces decodes with (Maven Central, cached in .cache/otel-proto).
  run('bash scripts/otel/fetch-proto.sh');
  run('npm run --silent build');
}

module.exports = { ensureDeps, ensureSandboxTools, build, run, root };
if (require.main === module) {
  ensureDeps();
  build();
}
