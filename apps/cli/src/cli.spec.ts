import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import * as tar from 'tar';
import { route } from './api-client';
import { COMMANDS, runCli } from './cli';
import { Progress, printRows } from './output';
import { resolveConnection } from './settings';
import { collectSecrets, packFolder, parseEnvFile } from './source-pack';

class Sink extends Writable {
  text = '';
  isTTY = false;
  override _write(chunk: Buffer, _enc: string, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

async function cli(args: string[], env: NodeJS.ProcessEnv = { LANGSMITH_API_KEY: 'th_unit', LANGSMITH_ENDPOINT: 'http://127.0.0.1:9' }) {
  const stdout = new Sink();
  const stderr = new Sink();
  const code = await runCli(args, { stdout, stderr, env });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

describe('tracehouse command line (in process, no service)', () => {
  it('every command has --help (exit 0) naming its usage and the exit codes', async () => {
    expect(COMMANDS.length).toBeGreaterThanOrEqual(15);
    for (const c of COMMANDS) {
      const r = await cli([...c.path, '--help']);
      expect({ path: c.path, code: r.code }).toEqual({ path: c.path, code: 0 });
      expect(r.stdout).toContain(`Usage: tracehouse ${c.path.join(' ')}`);
      expect(r.stdout).toContain('Exit codes: 0 ok, 1 failure');
    }
    for (const group of [[], ['deployments'], ['export'], ['export', 'destinations'], ['runs'], ['keys']]) {
      const r = await cli([...group, '--help']);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('Commands:');
    }
  });

  it('usage errors exit 2 with a message, before any request', async () => {
    const cases: [string[], RegExp][] = [
      [[], /Usage: tracehouse <command>/],
      [['deployments'], /deployments needs a command/],
      [['nope'], /unknown command: nope/],
      [['deployments', 'frobnicate'], /unknown command: deployments frobnicate/],
      [['deployments', 'list', '--bogus'], /Unknown option '--bogus'/],
      [['deployments', 'get'], /missing argument: <deployment>/],
      [['keys', 'revoke', 'a', 'b'], /unexpected argument: b/],
      [['keys', 'list', '--json', '--table'], /--json and --table exclude each other/],
      [['deploy', 'dir', '--repo', 'https://example.com/r.git'], /one of: a folder, --repo or --image/],
      [['deploy', '--image', 'x:1'], /--name is required/],
      [['deploy', '--ref', 'main'], /--ref goes with --repo/],
      [['deploy', '.', '--secret', '1BAD=x'], /--secret expects KEY=VALUE/],
      [['deploy', '.', '--timeout', 'soon'], /--timeout must be a positive number/],
      [['deployments', 'list', '--limit', '0'], /--limit must be an integer from 1/],
      [['runs', 'query', '--order', 'sideways'], /body\.order/],
      [['runs', 'query', '--select', 'id,not_a_field'], /body\.select\.1/],
      [['export', 'create', '--project', '00000000-0000-4000-8000-000000000000'], /--destination is required/],
      [['export', 'create', '-d', 'x', '-p', '00000000-0000-4000-8000-000000000000', '--start', '2026-01-01T00:00:00Z', '--end', '2026-01-02T00:00:00Z'], /body\.bulk_export_destination_id/],
      [['keys', 'create', '--expires-at', 'tomorrow'], /body\.expires_at/],
    ];
    for (const [args, message] of cases) {
      const r = await cli(args);
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.stderr).toMatch(message);
      expect(r.stdout).toBe('');
    }
    const noKey = await cli(['keys', 'list'], {});
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('no API key: set LANGSMITH_API_KEY');
  });

  it('a service that cannot be reached is a failure (exit 1), not a usage error', async () => {
    const r = await cli(['keys', 'list']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/could not reach http:\/\/127\.0\.0\.1:9/);
  });

  it('reads the SDKs’ variables, flags first; the endpoint may be the root, /api or /api/v1', () => {
    for (const e of ['http://h:1984', 'http://h:1984/', 'http://h:1984/api', 'http://h:1984/api/v1/']) {
      expect(resolveConnection({}, { LANGSMITH_ENDPOINT: e, LANGSMITH_API_KEY: 'k' })).toEqual({ endpoint: 'http://h:1984', controlPlaneUrl: 'http://h:1984', apiKey: 'k' });
    }
    expect(resolveConnection({}, { LANGCHAIN_ENDPOINT: 'https://x/base/api/v1', LANGCHAIN_API_KEY: 'old' })).toEqual({ endpoint: 'https://x/base', controlPlaneUrl: 'https://x/base', apiKey: 'old' });
    const both = { LANGSMITH_ENDPOINT: 'http://a', LANGCHAIN_ENDPOINT: 'http://b', LANGSMITH_API_KEY: 'new', LANGCHAIN_API_KEY: 'old', TRACEHOUSE_CONTROL_PLANE_URL: 'http://cp:8083/v2' };
    expect(resolveConnection({}, both)).toEqual({ endpoint: 'http://a', controlPlaneUrl: 'http://cp:8083', apiKey: 'new' });
    expect(resolveConnection({ endpoint: 'http://f', 'api-key': 'flag', 'control-plane-url': 'http://g' }, both)).toEqual({ endpoint: 'http://f', controlPlaneUrl: 'http://g', apiKey: 'flag' });
    expect(resolveConnection({}, { LANGSMITH_API_KEY: 'k' }).endpoint).toBe('http://127.0.0.1:1984');
    expect(resolveConnection({}, { LANGSMITH_ENDPOINT: '', LANGSMITH_API_KEY: '', LANGCHAIN_API_KEY: 'old' })).toMatchObject({ endpoint: 'http://127.0.0.1:1984', apiKey: 'old' });
    expect(() => resolveConnection({ endpoint: 'ftp://x' }, { LANGSMITH_API_KEY: 'k' })).toThrow('must be http(s)');
  });

  it('names routes only through the route table', () => {
    expect(route('post', '/api/v1/runs/query').service).toBe('query');
    expect(route('get', '/v2/deployments').service).toBe('control-plane');
    expect(() => route('get', '/v2/nothing-here')).toThrow('is not in the route table');
  });

  it('progress: a spinner status line at a terminal, one line per status change elsewhere', async () => {
    const tty = new Sink();
    tty.isTTY = true;
    const p = new Progress({ stdout: new Sink(), stderr: tty, env: {} });
    p.update('BUILDING', 'npm ci');
    await new Promise((r) => setTimeout(r, 250));
    p.update('DEPLOYED');
    p.stop();
    expect(tty.text).toMatch(/^\r\x1b\[K[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] BUILDING: npm ci \(\d+\.\ds\)/);
    expect(tty.text.split('\r\x1b[K').length).toBeGreaterThan(3); // redrawn while waiting
    expect(tty.text).toMatch(/\r\x1b\[KDEPLOYED \(\d+\.\ds\)\n$/);

    const log = new Sink();
    const q = new Progress({ stdout: new Sink(), stderr: log, env: {} });
    for (const s of ['QUEUED', 'BUILDING', 'BUILDING', 'DEPLOYED']) q.update(s);
    q.stop();
    expect(log.text.split('\n').filter(Boolean).map((l) => l.replace(/^\[\d+\.\ds\] /, ''))).toEqual(['QUEUED', 'BUILDING', 'DEPLOYED']);
  });

  it('tables: aligned columns, upper-case headers, long or nested values cut to one line', () => {
    const out = new Sink();
    const rows = [
      { id: 'a', note: 'short', extra: { k: 1 } },
      { id: 'bbbb', note: 'x'.repeat(100), extra: null },
    ];
    printRows({ stdout: out, stderr: new Sink(), env: {} }, 'table', rows, [
      { header: 'id', value: (r) => r.id },
      { header: 'note', value: (r) => r.note },
      { header: 'extra', value: (r) => r.extra },
    ]);
    const lines = out.text.split('\n');
    expect(lines[0]).toBe(`ID    NOTE${' '.repeat(56)}  EXTRA`);
    expect(lines[1]).toBe(`a     short${' '.repeat(55)}  {"k":1}`);
    expect(lines[2]).toBe(`bbbb  ${'x'.repeat(59)}…`);
  });

  describe('sources and secrets', () => {
    let dir: string;
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), 'cli-unit-'));
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('packs a folder without .git, node_modules and .env, paths relative to it', async () => {
      const src = join(dir, 'app');
      for (const d of ['src', 'node_modules/x', '.git', 'src/node_modules']) mkdirSync(join(src, d), { recursive: true });
      writeFileSync(join(src, 'langgraph.json'), '{}');
      writeFileSync(join(src, 'src/graph.js'), '//');
      writeFileSync(join(src, 'node_modules/x/index.js'), '//');
      writeFileSync(join(src, 'src/node_modules/y.js'), '//');
      writeFileSync(join(src, '.git/HEAD'), 'ref');
      writeFileSync(join(src, '.env'), 'SECRET=1');
      const { data, files } = await packFolder(src);
      expect(files).toBe(2);
      const tgz = join(dir, 'app.tgz');
      writeFileSync(tgz, data);
      const names: string[] = [];
      await tar.t({ file: tgz, onReadEntry: (e) => names.push(e.path) });
      expect(names.filter((n) => !n.endsWith('/')).sort()).toEqual(['langgraph.json', 'src/graph.js']);
      await expect(packFolder(join(dir, 'missing'))).rejects.toThrow('cannot read the folder');
    });

    it('reads --env-file (comments, export, quotes) and lets --secret win', () => {
      const f = join(dir, 'prod.env');
      writeFileSync(f, '# comment\nexport A=1\nB="two words"\nC=\'x#y\'\nD=plain # trailing\n\nE=\n');
      expect([...parseEnvFile(f)]).toEqual([['A', '1'], ['B', 'two words'], ['C', 'x#y'], ['D', 'plain'], ['E', '']]);
      expect(collectSecrets(f, ['A=override', 'F=a=b'])).toEqual([
        { name: 'A', value: 'override' },
        { name: 'B', value: 'two words' },
        { name: 'C', value: 'x#y' },
        { name: 'D', value: 'plain' },
        { name: 'E', value: '' },
        { name: 'F', value: 'a=b' },
      ]);
      expect(collectSecrets(undefined, [])).toBeUndefined();
      writeFileSync(f, 'not a pair\n');
      expect(() => parseEnvFile(f)).toThrow(`${f}:1: expected KEY=VALUE`);
    });
  });
});
