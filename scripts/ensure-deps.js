// Installs dependencies when node_modules is missing or older than package-lock.json, then builds.
'use strict';
const { execSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const root = path.resolve(__dirname, '..');

function run(cmd, env = {}) {
  execSync(cmd, { cwd: root, stdio: 'inherit', env: { ...process.env, NX_DAEMON: 'false', ...env } });
}

/**
 * Whether node_modules lacks a package version the lock file names (or names one at another version): judged by
 * content, npm's own record of what it installed (node_modules/.package-lock.json), not by modification times,
 * which a fresh checkout or worktree always makes newer than an installed node_modules.
 */
function depsStale() {
  const marker = path.join(root, 'node_modules', '.package-lock.json');
  if (!fs.existsSync(marker)) return true;
  const installed = JSON.parse(fs.readFileSync(marker, 'utf8')).packages ?? {};
  const wanted = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8')).packages ?? {};
  return Object.entries(wanted).some(([name, pkg]) => name !== '' && !pkg.optional && installed[name]?.version !== pkg.version);
}

function ensureDeps() {
  if (!depsStale()) return;
  // npm ci empties node_modules first: through a link (a worktree sharing another checkout's node_modules) that
  // would wipe the other checkout's packages, so a linked node_modules is never reinstalled here.
  if (fs.existsSync(path.join(root, 'node_modules')) && fs.lstatSync(path.join(root, 'node_modules')).isSymbolicLink()) {
    process.stdout.write('node_modules is a link to another checkout and does not match package-lock.json: install there, not here.\n');
    return;
  }
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

/**
 * Installs a Debian package with apt-get (as root), running `apt-get update` first only when the lists are stale.
 * Waits up to five minutes for another apt-get's lock instead of failing at once.
 */
function aptInstall(pkg) {
  process.stdout.write(`Installing ${pkg} (apt-get install ${pkg})...\n`);
  const apt = 'apt-get -o DPkg::Lock::Timeout=300';
  try {
    run(`${apt} install -y --no-install-recommends ${pkg}`);
  } catch {
    run(`${apt} update && ${apt} install -y --no-install-recommends ${pkg}`);
  }
}

function hasCommand(cmd) {
  try {
    execSync(`command -v ${cmd}`, { stdio: 'ignore', shell: '/bin/sh' });
    return true;
  } catch {
    return false;
  }
}

/**
 * bubblewrap: the control plane runs deployments' code only inside it (AGENT_SANDBOX), and its tests check that.
 * Installed from Debian's packages when missing and this runs as root; otherwise a clear error.
 */
function ensureSandboxTools() {
  if (process.platform !== 'linux' || hasCommand('bwrap')) return;
  if (process.getuid() !== 0 || !hasCommand('apt-get')) {
    throw new Error('bubblewrap (bwrap) is missing: install it (Debian/Ubuntu: apt-get install bubblewrap); deployments run only inside it');
  }
  aptInstall('bubblewrap');
}

/** Debian's chromium, which the web app's browser tests drive (playwright-core); installed when missing, as root. */
const CHROMIUM = '/usr/bin/chromium';
function ensureChromium() {
  if (fs.existsSync(CHROMIUM)) return;
  if (process.getuid?.() !== 0 || !hasCommand('apt-get')) {
    process.stdout.write(`${CHROMIUM} is missing and this is not root: install it (apt-get install -y chromium) for the web app's browser tests\n`);
    return;
  }
  aptInstall('chromium');
}

/** Prometheus and promtool (Debian's package): the alert-rule and scrape tests of deploy/prometheus run them. */
function ensurePrometheus() {
  if (process.platform !== 'linux' || (hasCommand('prometheus') && hasCommand('promtool'))) return;
  if (process.getuid?.() !== 0 || !hasCommand('apt-get')) {
    process.stdout.write('prometheus is missing and this is not root: install it (apt-get install -y prometheus) for the metrics tests\n');
    return;
  }
  aptInstall('prometheus');
}

/** Newest modification time of the files under `dir` (0 when it does not exist). */
function newestMtime(dir) {
  if (!fs.existsSync(dir)) return 0;
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) newest = Math.max(newest, fs.statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

/** The web app (dist/web), rebuilt when missing or older than its sources, the contracts or the lock file. */
function buildWeb() {
  const page = path.join(root, 'dist', 'web', 'index.html');
  const built = fs.existsSync(page) ? fs.statSync(page).mtimeMs : 0;
  const sources = Math.max(
    newestMtime(path.join(root, 'apps', 'web')),
    newestMtime(path.join(root, 'libs', 'contracts', 'src')),
    fs.statSync(path.join(root, 'package-lock.json')).mtimeMs,
  );
  // React's production build: a caller's NODE_ENV (jest sets `test`) would otherwise give its development build.
  if (built < sources) run('npm run --silent build:web', { NODE_ENV: 'production' });
}

function build() {
  // The OTLP .proto definitions /otel/v1/traces decodes with (Maven Central, cached in .cache/otel-proto).
  run('bash scripts/otel/fetch-proto.sh');
  run('npm run --silent build');
  buildWeb();
}

module.exports = { ensureDeps, ensureSandboxTools, ensureChromium, ensurePrometheus, build, buildWeb, run, root, CHROMIUM };
if (require.main === module) {
  ensureDeps();
  build();
}
