#!/usr/bin/env node
// The published Python `langsmith` SDK's own integration suites (../shared/published-clients/langsmith-python-tests)
// against the standalone service: node scripts/python-sdk.js [test files, relative to the suites' folder].
// Installs the SDK and pytest from the machine's configured package index into .cache/python-sdk-venv (again only when
// scripts/python-sdk/requirements*.txt change), starts the built standalone service (npm run build first) on a free
// 127.0.0.1 port with a temporary DATA_DIR, runs pytest, and compares each test's outcome with
// scripts/python-sdk/expected.json (every test known not to pass here, with its category and reason). Fails on a failure
// that is not listed, on a listed test that now passes (so the list only shrinks) and on a listed test that no longer
// exists. Settings: PYTHON_SDK_TESTS (the suites' folder), PYTHON_SDK_TEST_TIMEOUT_S (per test, 60),
// PYTHON_SDK_TIMEOUT_S (the whole pytest run, 900), PYTHON (the interpreter the venv is made from, python3),
// PYTHON_SDK_JUNIT (a path to keep pytest's junit XML at).
'use strict';
const { spawn, spawnSync } = require('node:child_process');
const { createHash, randomBytes } = require('node:crypto');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const here = path.join(__dirname, 'python-sdk');
const suitesGiven = path.resolve(process.env.PYTHON_SDK_TESTS ?? path.join(root, '..', 'shared', 'published-clients', 'langsmith-python-tests'));
// pytest names files relative to its rootdir after resolving links: a linked folder would give '../' names.
const suites = fs.existsSync(suitesGiven) ? fs.realpathSync(suitesGiven) : suitesGiven;
const venv = path.join(root, '.cache', 'python-sdk-venv');
const expectedFile = path.join(here, 'expected.json');
const perTestTimeoutS = Number(process.env.PYTHON_SDK_TEST_TIMEOUT_S ?? 60);
const overallTimeoutS = Number(process.env.PYTHON_SDK_TIMEOUT_S ?? 900);

/** The files of issues 32 and 28 (prompt hub); tests/integration_tests/wrappers needs provider SDKs and cassettes. */
const DEFAULT_FILES = [
  'tests/integration_tests/test_client.py',
  'tests/integration_tests/test_runs.py',
  'tests/integration_tests/test_async_client.py',
  'tests/integration_tests/test_experiment_manager.py',
  'tests/integration_tests/test_v2_datasets.py',
  'tests/integration_tests/test_v2_public_runs.py',
  'tests/integration_tests/test_v2_runs_share.py',
  'tests/integration_tests/test_v2_threads.py',
  'tests/integration_tests/test_v2_traces.py',
  'tests/integration_tests/test_prompts.py',
  'tests/integration_tests/test_prompts_async.py',
  'tests/integration_tests/test_hub_client.py',
  'tests/integration_tests/test_hub_client_async.py',
  'tests/evaluation',
];

/** Categories whose tests cannot pass against any self-hosted service: shown as "not applicable". */
const NOT_APPLICABLE = new Set(['hosted-only', 'provider SDK missing', 'other SDK version']);
const CATEGORY = /^(hosted-only|provider SDK missing|other SDK version|prompt hub \(issue 28\)|annotation queues\/evaluators \(later issue\)|not yet supported: .+ \(issue 32\))$/;

function log(line) {
  process.stdout.write(`[python-sdk] ${line}\n`);
}

function sh(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', ...opts });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited with ${r.status ?? r.signal}`);
}

/** Creates the venv when it is missing or was made from other requirement files. */
function ensureVenv() {
  const reqs = ['requirements.txt', 'requirements-no-deps.txt'].map((f) => path.join(here, f));
  const digest = createHash('sha256');
  for (const f of reqs) digest.update(fs.readFileSync(f));
  const want = digest.digest('hex');
  const stamp = path.join(venv, '.requirements-sha256');
  const python = path.join(venv, 'bin', 'python');
  if (fs.existsSync(python) && fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8').trim() === want) return python;
  log(`creating ${path.relative(root, venv)} from the configured package index...`);
  fs.rmSync(venv, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(venv), { recursive: true });
  sh(process.env.PYTHON ?? 'python3', ['-m', 'venv', venv]);
  // --retries 0: an unreachable index in the machine's pip configuration is skipped at once instead of retried per package.
  const pip = [path.join(venv, 'bin', 'pip'), 'install', '--quiet', '--retries', '0', '--disable-pip-version-check'];
  sh(pip[0], [...pip.slice(1), '-r', reqs[0]]);
  sh(pip[0], [...pip.slice(1), '--no-deps', '-r', reqs[1]]);
  fs.writeFileSync(stamp, want + '\n');
  return python;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** The built standalone service (`node scripts/run.js standalone`) in its own process, its data in `dataDir`. */
async function startService(dataDir) {
  const port = await freePort();
  const apiKey = `th_pysdk_${randomBytes(12).toString('hex')}`;
  const child = spawn(process.execPath, [...require('./node-flags'), path.join(root, 'scripts', 'run.js'), 'standalone'], {
    cwd: root,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      BOOTSTRAP_API_KEY: apiKey,
      PRINT_BANNER: 'false',
      LOG_LEVEL: 'warn',
      // The suites call list endpoints far more often than the spec's production limits allow one key.
      RATE_LIMIT_ENABLED: 'false',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (d) => (out = (out + d.toString()).slice(-20_000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the service exited (${child.exitCode ?? child.signalCode}):\n${out}`);
    try {
      if ((await fetch(`${url}/health/ready`)).status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the service was not ready in 120 s:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  // The prompt suites push public prompts, which needs the workspace's handle (set once, as a user would).
  const handle = await fetch(`${url}/api/v1/settings/handle`, {
    method: 'POST',
    headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
    body: JSON.stringify({ tenant_handle: `pysdk-${randomBytes(4).toString('hex')}` }),
  });
  if (handle.status !== 200) throw new Error(`setting the workspace handle answered ${handle.status}: ${await handle.text()}`);
  return {
    url,
    apiKey,
    log: () => out,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 20_000);
        await exited;
        clearTimeout(t);
      }
    },
  };
}

function unescapeXml(s) {
  return s.replace(/&(#x[0-9a-fA-F]+|#\d+|quot|apos|lt|gt|amp);/g, (_, e) => {
    if (e[0] === '#') return String.fromCodePoint(e[1] === 'x' ? parseInt(e.slice(2), 16) : Number(e.slice(1)));
    return { quot: '"', apos: "'", lt: '<', gt: '>', amp: '&' }[e];
  });
}

function attrs(tag) {
  const out = {};
  for (const m of tag.matchAll(/([\w:-]+)="([^"]*)"/g)) out[m[1]] = unescapeXml(m[2]);
  return out;
}

/**
 * Outcomes from pytest's junit XML (xunit1: each testcase names its file): nodeid → {outcome, message}.
 * The format is pytest's own and flat, so a scan of the testcase elements is enough.
 */
function readJunit(xml) {
  const results = new Map();
  for (const m of xml.matchAll(/<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const a = attrs(m[1]);
    const body = m[3] ?? '';
    // A test function imported from the SDK (test_evaluation.py imports langsmith's `test`) names the SDK's file:
    // then the module comes from the class name (its last part, when capitalized, being a test class).
    const parts = a.classname.split('.');
    const inSuites = a.file && !a.file.startsWith('..') && !path.isAbsolute(a.file);
    const moduleParts = /^[A-Z]/.test(parts[parts.length - 1] ?? '') ? parts.slice(0, -1) : parts;
    const file = inSuites ? a.file : moduleParts.join('/') + '.py';
    const moduleName = file.replace(/\.py$/, '').replace(/\//g, '.');
    const cls = a.classname && a.classname.startsWith(moduleName + '.') ? a.classname.slice(moduleName.length + 1) : '';
    const id = [file, ...(cls ? [cls] : []), a.name].join('::');
    const child = /<(failure|error|skipped)\b([^>]*?)(?:\/>|>([\s\S]*?)<\/\1>)/.exec(body);
    let outcome = 'passed';
    let message = '';
    if (child) {
      const c = attrs(child[2]);
      outcome = child[1] === 'skipped' ? 'skipped' : 'failed';
      message = (c.message ?? '').split('\n')[0].slice(0, 300);
    }
    // A teardown error is a second element after a passing call: a failure all the same.
    if (outcome !== 'failed' && /<(failure|error)\b/.test(body)) outcome = 'failed';
    results.set(id, { outcome, message });
  }
  return results;
}

/**
 * expected.json: `tests` (node id → {category, reason}: each test known not to pass here) and `markers` (pytest
 * marker → {category, reason}: tests the suites mark as needing what this service does not serve yet; they are
 * not run, only counted, unless PYTHON_SDK_RUN_MARKED=1).
 */
function readExpected() {
  const expected = JSON.parse(fs.readFileSync(expectedFile, 'utf8'));
  for (const [id, e] of [...Object.entries(expected.tests), ...Object.entries(expected.markers ?? {})]) {
    if (!CATEGORY.test(e.category) || !e.reason) throw new Error(`${path.relative(root, expectedFile)}: ${id} needs a known category and a reason`);
  }
  return { tests: expected.tests, markers: process.env.PYTHON_SDK_RUN_MARKED === '1' ? {} : expected.markers ?? {} };
}

/** The file (or folder) among `files` a node id belongs to, for the summary. */
function groupOf(id, files) {
  const file = id.split('::')[0];
  return files.find((f) => file === f || file.startsWith(f.replace(/\/?$/, '/'))) ?? file;
}

async function main() {
  const files = process.argv.slice(2).length ? process.argv.slice(2) : DEFAULT_FILES;
  if (!fs.existsSync(path.join(suites, 'conftest.py'))) throw new Error(`the suites are not at ${suites} (PYTHON_SDK_TESTS)`);
  if (!fs.existsSync(path.join(root, 'dist', 'apps', 'standalone', 'src', 'main.js'))) throw new Error('dist/ is missing: run `npm run build` first');
  const { tests: expected, markers } = readExpected();
  const python = ensureVenv();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'th-python-sdk-'));
  // Run as root, the embedded PostgreSQL's initdb runs as the postgres user, which must traverse this folder.
  fs.chmodSync(tmp, 0o711);
  const started = Date.now();
  let service;
  const cleanup = async () => {
    await service?.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  };
  for (const sig of ['SIGINT', 'SIGTERM']) process.once(sig, () => void cleanup().finally(() => process.exit(130)));
  try {
    service = await startService(path.join(tmp, 'data'));
    log(`service at ${service.url} after ${((Date.now() - started) / 1000).toFixed(1)} s; running pytest on ${files.join(' ')}`);
    const junit = path.join(tmp, 'junit.xml');
    const env = {
      ...process.env,
      // Stand-ins for vcrpy and the OpenTelemetry SDK, which the index cannot install (stand-ins/*/__init__.py say why).
      PYTHONPATH: path.join(here, 'stand-ins'),
      PYTHONDONTWRITEBYTECODE: '1',
      LANGSMITH_ENDPOINT: service.url,
      LANGSMITH_API_KEY: service.apiKey,
      LANGCHAIN_ENDPOINT: service.url,
      LANGCHAIN_API_KEY: service.apiKey,
      LANGSMITH_TRACING: 'true',
    };
    // preload_pydantic_v1 (stand-ins/): see its docstring.
    const base = ['-m', 'pytest', '-p', 'no:cacheprovider', '-p', 'preload_pydantic_v1', '--rootdir', suites, '-c', path.join(suites, 'pyproject.toml')];
    const markerNames = Object.keys(markers);
    const marked = markerNames.length > 0 ? `(${markerNames.join(' or ')})` : null;
    // The tests of the listed markers, by file: collected only (counted, not run).
    const markedIds = [];
    if (marked) {
      const r = spawnSync(python, [...base, '--collect-only', '-q', '-m', marked, ...files], { cwd: suites, env, encoding: 'utf8', timeout: 120_000 });
      for (const line of (r.stdout ?? '').split('\n')) if (/^tests\/\S+::/.test(line)) markedIds.push(line.trim());
    }
    const args = [
      // The suites' folder is read-only: no .pytest_cache (no:cacheprovider), no bytecode (PYTHONDONTWRITEBYTECODE).
      ...base,
      `--timeout=${perTestTimeoutS}`,
      // SIGALRM fails the one test; the suites' own "thread" method ends the whole pytest process (and its report).
      '--timeout-method=signal',
      '-o', 'junit_family=xunit1',
      `--junitxml=${junit}`,
      '-v', '-rN', '--no-header', '--tb=no',
      ...(marked ? ['-m', `not ${marked}`] : []),
      // PYTHON_SDK_PYTEST_ARGS: more pytest arguments (e.g. `-k name` or `--deselect <node id>` when investigating).
      ...(process.env.PYTHON_SDK_PYTEST_ARGS ?? '').split(' ').filter(Boolean),
      ...files,
    ];
    const code = await new Promise((resolve) => {
      const child = spawn(python, args, {
        cwd: suites,
        env,
        stdio: ['ignore', 'inherit', 'inherit'],
      });
      const t = setTimeout(() => {
        log(`pytest still running after ${overallTimeoutS} s: stopping it`);
        child.kill('SIGKILL');
      }, overallTimeoutS * 1000);
      child.once('exit', (c, s) => {
        clearTimeout(t);
        resolve(c ?? s);
      });
    });
    if (!fs.existsSync(junit)) throw new Error(`pytest wrote no results (exit ${code})`);
    // PYTHON_SDK_JUNIT keeps a copy of pytest's report (for updating expected.json by hand).
    if (process.env.PYTHON_SDK_JUNIT) fs.copyFileSync(junit, process.env.PYTHON_SDK_JUNIT);
    const results = readJunit(fs.readFileSync(junit, 'utf8'));
    const problems = [];
    const empty = () => ({ passed: 0, expected: 0, na: 0, marked: 0, skipped: 0, problems: 0 });
    const summary = new Map(files.map((f) => [f, empty()]));
    for (const id of markedIds) {
      const s = summary.get(groupOf(id, files)) ?? empty();
      summary.set(groupOf(id, files), s);
      s.marked++;
    }
    for (const [id, r] of results) {
      const s = summary.get(groupOf(id, files)) ?? empty();
      summary.set(groupOf(id, files), s);
      const e = expected[id];
      if (r.outcome === 'skipped') s.skipped++;
      else if (r.outcome === 'passed' && !e) s.passed++;
      else if (r.outcome === 'passed') {
        s.problems++;
        problems.push(`now passes, remove it from expected.json: ${id} (${e.category})`);
      } else if (e) {
        if (NOT_APPLICABLE.has(e.category)) s.na++;
        else s.expected++;
      } else {
        s.problems++;
        problems.push(`FAILED: ${id}: ${r.message}`);
      }
    }
    for (const id of Object.keys(expected)) {
      const inRun = files.some((f) => id.startsWith(f.endsWith('.py') ? `${f}::` : f.replace(/\/?$/, '/')));
      if (inRun && !results.has(id)) problems.push(`listed in expected.json but not in this run: ${id}`);
    }
    log(`results (${((Date.now() - started) / 1000).toFixed(0)} s):`);
    for (const [f, s] of summary) {
      const notRun = s.marked ? `, ${s.marked} not run (${markerNames.join('/')})` : '';
      log(`  ${f}: ${s.passed} passed, ${s.expected} failed as expected, ${s.na} not applicable${notRun}, ${s.skipped} skipped by pytest${s.problems ? `, ${s.problems} PROBLEMS` : ''}`);
    }
    for (const [m, e] of Object.entries(markers)) log(`  not run, marked ${m}: ${e.category}: ${e.reason}`);
    if (problems.length) {
      for (const p of problems) log(p);
      const logTail = service.log().trim();
      if (logTail) log(`service log (tail):\n${logTail.slice(-4_000)}`);
      process.exitCode = 1;
    } else if (code !== 0 && code !== 1) {
      // 1 is "some tests failed" (all of them listed); anything else is pytest itself failing or being stopped.
      log(`pytest exited with ${code}`);
      process.exitCode = 1;
    }
  } finally {
    await cleanup();
  }
}

// --venv: only make sure of the venv and print its interpreter (for jest specs that drive the SDK themselves).
if (process.argv[2] === '--venv') {
  const python = ensureVenv();
  process.stdout.write(`${JSON.stringify({ python, pythonPath: path.join(here, 'stand-ins') })}\n`);
} else {
  main().catch((err) => {
    process.stderr.write(`[python-sdk] ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  });
}
