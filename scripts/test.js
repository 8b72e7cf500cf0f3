#!/usr/bin/env node
// npm test: installs what is missing, builds (cluster tests run the compiled apps), type-checks,
// lints module boundaries, then runs every jest suite against the real servers the suites start and, alongside them,
// the published Python SDK's own integration suites against the standalone service.
// npm test -- <jest patterns and options>: the same, but the build, type-check and lint are skipped when no source
// changed since they last passed (a stamp in .cache), only the matching jest suites run, and the Python suites run only
// when an argument names them (`python`, e.g. `npm test -- python`).
'use strict';
const { ensureDeps, ensureSandboxTools, ensureChromium, ensurePrometheus, build, run, root } = require('./ensure-deps');
const { spawn } = require('node:child_process');
const { createHash } = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const args = process.argv.slice(2);
const python = args.some((a) => /^python/i.test(a));
const jestArgs = args.filter((a) => !/^python/i.test(a));
const focused = args.length > 0;

/** What the build, type-check and lint read: every source and config file's path, size and modification time. */
function sourceStamp() {
  const skip = new Set(['node_modules', 'dist', '.cache', '.nx', '.data', 'coverage', '__pycache__', '.git']);
  const hash = createHash('sha256');
  const visit = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (skip.has(entry.name)) continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) visit(full);
      else if (entry.isFile()) {
        const st = fs.statSync(full);
        hash.update(`${path.relative(root, full)}\0${st.size}\0${st.mtimeMs}\n`);
      }
    }
  };
  for (const dir of ['apps', 'libs', 'tools', 'bench', 'scripts']) visit(path.join(root, dir));
  for (const file of fs.readdirSync(root)) {
    const full = path.join(root, file);
    if (fs.statSync(full).isFile()) hash.update(`${file}\0${fs.statSync(full).mtimeMs}\n`);
  }
  return hash.digest('hex');
}

// Named by the checkout, as .cache may be shared between worktrees of one repository.
const stampFile = path.join(root, '.cache', `test-checked-${createHash('sha256').update(root).digest('hex').slice(0, 12)}`);
const built = fs.existsSync(path.join(root, 'dist', 'apps', 'standalone', 'src', 'main.js'));
const stamp = sourceStamp();
const unchanged = focused && built && fs.existsSync(stampFile) && fs.readFileSync(stampFile, 'utf8') === stamp;

ensureDeps();
ensureSandboxTools();
ensureChromium();
ensurePrometheus();
if (unchanged) {
  process.stdout.write('Sources unchanged since the last checked build: skipping the build, type-check and lint.\n');
} else {
  build();
  run('npx tsc -p tsconfig.base.json');
  run('npx tsc -p apps/web/tsconfig.json');
  if (fs.existsSync(path.join(root, 'eslint.config.mjs'))) run('npx eslint apps libs tools --max-warnings=0');
  fs.mkdirSync(path.dirname(stampFile), { recursive: true });
  // The stamp of the sources as they were checked: a file saved meanwhile makes the next run check again.
  fs.writeFileSync(stampFile, stamp);
}
// The Python SDK's venv (from the configured package index) before jest: a jest suite drives the SDK through it too.
if (!focused || python) run('node scripts/python-sdk.js --venv');
// The published Python SDK's own integration suites against the built standalone service (scripts/python-sdk.js),
// alongside jest when both run: they wait on the network most of the time (about a minute of CPU over two). Their
// output goes to a log file, printed when they end.
const pythonRun = !focused || python ? startPythonSuites() : null;
let jestFailed = null;
if (!focused || jestArgs.length > 0) {
  try {
    run(`npx jest --ci ${jestArgs.join(' ')}`.trim());
  } catch (err) {
    jestFailed = err;
  }
}
if (pythonRun) {
  void pythonRun.then((code) => {
    if (code !== 0) process.stderr.write(`The Python SDK's suites failed (exit ${code}).\n`);
    if (jestFailed) process.stderr.write(`jest failed: ${jestFailed.message}\n`);
    if (code !== 0 || jestFailed) process.exit(1);
  });
} else if (jestFailed) throw jestFailed;

function startPythonSuites() {
  const log = path.join(root, '.cache', 'python-sdk.log');
  fs.mkdirSync(path.dirname(log), { recursive: true });
  const out = fs.openSync(log, 'w');
  const child = spawn(process.execPath, [path.join(root, 'scripts', 'python-sdk.js')], { cwd: root, stdio: ['ignore', out, out] });
  fs.closeSync(out);
  // Stopped with this script (a jest failure still waits for the Python results, which are reported too).
  process.once('SIGINT', () => child.kill('SIGINT'));
  process.once('SIGTERM', () => child.kill('SIGTERM'));
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      process.stdout.write(`\n${fs.readFileSync(log, 'utf8')}`);
      resolve(code ?? (signal ? 1 : 0));
    });
  });
}
