import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import http from 'node:http';
import net from 'node:net';
import { join } from 'node:path';
import { Client } from 'pg';
import { OutboundPolicy } from '@th/platform';
import { startConnectionCounter, TEST_POSTGRES_ADMIN_URL } from '@th/testing';
import { Sandbox, stopSandboxed, type SandboxJob } from './sandbox';
import { ConnectionBudget, RELAY_LIMITS, SandboxNetwork } from './sandbox-network';

// The real bubblewrap (scripts/test.js installs it): what tenant code sees, and how it is stopped.
const UID = 65534;
const asRoot = process.getuid?.() === 0;

/** Host pids of the processes in a PID namespace. */
function inNamespace(ns: string): string[] {
  return readdirSync('/proc').filter((p) => /^\d+$/.test(p) && (() => {
    try {
      return readlinkSync(`/proc/${p}/ns/pid`) === ns;
    } catch {
      return false;
    }
  })());
}

describe('Sandbox (bubblewrap)', () => {
  const root = mkdtempSync(join(tmpdir(), 'sandbox-spec-'));
  const app = join(root, 'rev', 'src');
  const home = join(root, 'rev', 'home');
  const secretDir = join(root, 'secrets');
  const sb = new Sandbox({ mode: 'bwrap', uid: UID, gid: UID, readOnlyPaths: [] });
  beforeAll(() => {
    for (const d of [app, home, secretDir]) mkdirSync(d, { recursive: true });
    writeFileSync(join(secretDir, 'session-secret'), 'TOP-SECRET-VALUE', { mode: 0o644 });
    writeFileSync(join(app, 'mine.txt'), 'mine');
    chmodSync(root, 0o711); // traversable, not listable: how the driver keeps its work folder
    chmodSync(secretDir, 0o700);
    if (asRoot) for (const d of [app, home]) chownSync(d, UID, UID);
    sb.handOver(app);
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  async function run(script: string, env: Record<string, string> = {}, extra: Partial<SandboxJob> = {}): Promise<{ code: number | null; out: string }> {
    const p = sb.spawn({ argv: ['sh', '-c', script], appDir: app, homeDir: home, cwd: app, env: sb.baseEnv({ appDir: app, homeDir: home }, env), output: 'pipe', ...extra });
    let out = '';
    p.child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
    p.child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
    const code = await new Promise<number | null>((res) => p.child.on('close', (c) => res(c)));
    return { code, out };
  }

  it('is available on this machine', () => {
    expect(sb.unavailable()).toBeNull();
  });

  it('sees its own folder at /app, a private /tmp and /proc, its environment only, no host files, an unprivileged uid', async () => {
    const { code, out } = await run(
      [
        'echo "uid=$(id -u)"',
        'echo "pwd=$(pwd)"',
        'cat /app/mine.txt; echo',
        'echo x > /app/written && echo app-writable',
        'echo x > /usr/x 2>/dev/null || echo usr-readonly',
        `cat ${join(secretDir, 'session-secret')} 2>/dev/null || echo secret-unreadable`,
        `ls ${root} 2>/dev/null || echo root-invisible`,
        'echo "procs=$(ls /proc | grep -c "^[0-9]")"',
        'tr "\\0" "\\n" </proc/1/environ | sort | tr "\\n" " "; echo',
        'echo "fds=$(ls /proc/self/fd | tr "\\n" " ")"',
        'echo "home=$HOME tmp=$TMPDIR"',
        'echo "top=$(ls / | tr "\\n" " ")"',
      ].join('; '),
      { GREETING: "it's" },
    );
    expect(code).toBe(0);
    expect(out).toContain(`uid=${asRoot ? UID : process.getuid?.()}`);
    expect(out).toContain('pwd=/app');
    expect(out).toContain('mine');
    expect(out).toContain('app-writable');
    expect(out).toContain('usr-readonly');
    expect(out).toContain('secret-unreadable');
    expect(out).toContain('root-invisible');
    expect(out).not.toContain('TOP-SECRET-VALUE');
    // pid 1 (sh), the subshell running ls and grep: nothing of the host's.
    expect(Number(/procs=(\d+)/.exec(out)?.[1])).toBeLessThan(6);
    const env = /^GREETING.*$/m.exec(out)?.[0] ?? '';
    const names = env.split(' ').filter(Boolean).map((kv) => kv.split('=')[0]);
    expect(names.filter((n) => !['GREETING', 'HOME', 'PATH', 'PWD', 'TMPDIR', 'SHLVL', 'OLDPWD'].includes(n))).toEqual([]);
    expect(env).toContain("GREETING=it's");
    expect(env).not.toMatch(/SECRET|KEY|DATABASE/);
    // Only the standard streams and ls's own directory handle: nothing inherited from the service.
    expect(/fds=(.*)/.exec(out)?.[1].trim().split(' ')).toEqual(['0', '1', '2', '3']);
    expect(out).toContain('home=/home/app tmp=/tmp');
    const top = /top=(.*)/.exec(out)?.[1].trim().split(' ') ?? [];
    expect(top).toEqual(expect.arrayContaining(['app', 'usr', 'tmp', 'proc', 'etc', 'home']));
    expect(top.filter((d) => !['app', 'bin', 'dev', 'etc', 'home', 'lib', 'lib32', 'lib64', 'libx32', 'proc', 'sbin', 'tmp', 'usr'].includes(d))).toEqual([]);
  });

  describe('network: a namespace of its own, the host reached only through the relays', () => {
    const role = `th_sbx_${process.pid}_${Date.now() % 100000}`;
    const admin = new Client({ connectionString: TEST_POSTGRES_ADMIN_URL });
    const pgUrl = new URL(TEST_POSTGRES_ADMIN_URL);
    const netDir = join(root, 'rev', 'net');
    let hostListener: Awaited<ReturnType<typeof startConnectionCounter>>;
    let allowed: http.Server;
    let allowedPort = 0;
    let trace: http.Server;
    let tracePort = 0;
    let network: SandboxNetwork;
    const traced: string[] = [];
    const listen = (server: http.Server) => new Promise<number>((r) => server.listen(0, '127.0.0.1', () => r((server.address() as net.AddressInfo).port)));

    beforeAll(async () => {
      await admin.connect();
      await admin.query(`CREATE ROLE "${role}" LOGIN PASSWORD 'pw'`);
      await admin.query(`CREATE DATABASE "${role}" OWNER "${role}"`);
      hostListener = await startConnectionCounter();
      allowed = http.createServer((_req, res) => res.end('allowed-body'));
      allowedPort = await listen(allowed);
      trace = http.createServer((req, res) => {
        traced.push(`${req.method} ${req.url}`);
        res.end('traced');
      });
      tracePort = await listen(trace);
      network = await SandboxNetwork.open(
        netDir,
        {
          postgres: { host: pgUrl.hostname, port: Number(pgUrl.port) || 5432, user: role, database: role },
          trace: new URL(`http://127.0.0.1:${tracePort}/api/v1`),
          proxy: new OutboundPolicy(`localhost:${allowedPort}`),
        },
        new ConnectionBudget(RELAY_LIMITS.maxConnections),
      );
    });
    afterAll(async () => {
      await network?.close();
      await admin.query(`DROP DATABASE IF EXISTS "${role}" WITH (FORCE)`);
      await admin.query(`DROP ROLE IF EXISTS "${role}"`);
      await admin.end();
      await hostListener?.close();
      await new Promise((r) => allowed?.close(r));
      await new Promise((r) => trace?.close(r));
    });

    const PROBE = `
      const net = require('node:net');
      const http = require('node:http');
      const { Client } = require(process.env.PG_MODULE);
      const tcp = (port) => new Promise((res) => { const s = net.connect(port, '127.0.0.1'); s.on('connect', () => { s.destroy(); res('connected'); }); s.on('error', (e) => res(e.code)); });
      const pg = async (user, database) => {
        const c = new Client({ host: '127.0.0.1', port: 5432, user, database, password: 'pw' });
        try { await c.connect(); return (await c.query('SELECT current_user AS u, current_database() AS d')).rows[0]; }
        catch (e) { return String(e.message); } finally { await c.end().catch(() => undefined); }
      };
      const get = (url) => new Promise((res) => http.get(url, (r) => { let b = ''; r.on('data', (d) => (b += d)); r.on('end', () => res(r.statusCode + ' ' + b)); }).on('error', (e) => res(e.code)));
      (async () => {
        const out = { host: await tcp(Number(process.env.HOST_PORT)), tracePortDirect: await tcp(Number(process.env.TRACE_PORT)), pg5433: await tcp(5433) };
        out.own = await pg(process.env.ROLE, process.env.ROLE);
        out.otherRole = await pg('postgres', process.env.ROLE);
        out.otherDb = await pg(process.env.ROLE, 'postgres');
        out.trace = await get('http://127.0.0.1:1984/api/v1/runs');
        console.log('PROBE ' + JSON.stringify(out));
      })();`;

    it('reaches no host loopback port; its own database through the relay (no other role or database); tracing; the internet only through the policy', async () => {
      writeFileSync(join(app, 'probe.js'), PROBE);
      const proxy = (flags: string, url: string) => `echo "${url} $(curl -s -m 5 --noproxy '' -x http://127.0.0.1:3128 ${flags} -o /dev/null -w '%{http_code}/%{http_connect}' ${url})"`;
      const nodeModules = join(__dirname, '..', '..', '..', '..', 'node_modules');
      const { code, out } = await run(
        [
          'node /app/probe.js',
          'echo "proxy-env=$HTTPS_PROXY $https_proxy $NO_PROXY"',
          `echo "allowed=$(curl -s -m 5 http://localhost:${allowedPort}/ --noproxy '' -x $HTTP_PROXY)"`,
          proxy('-p', `http://localhost:${allowedPort}/`),
          proxy('', `http://localhost:${hostListener.port}/`),
          proxy('-p', `http://127.0.0.1:${hostListener.port}/`),
          proxy('-p', 'http://127.0.0.1:5432/'),
          proxy('', 'http://169.254.169.254/latest/meta-data/'),
          `echo "direct=$(curl -s -m 5 -o /dev/null -w '%{http_code}' http://127.0.0.1:${hostListener.port}/ || true)"`,
        ].join('; '),
        { PG_MODULE: join(nodeModules, 'pg'), ROLE: role, HOST_PORT: String(hostListener.port), TRACE_PORT: String(tracePort), ...network.proxyEnv() },
        { network: { hostDir: network.hostDir, relayArgs: network.relayArgs() }, readOnly: [nodeModules] },
      );
      expect({ code, out }).toMatchObject({ code: 0 });
      const probe = JSON.parse(/^PROBE (.*)$/m.exec(out)?.[1] ?? '{}') as Record<string, unknown>;
      expect(probe).toMatchObject({ host: 'ECONNREFUSED', tracePortDirect: 'ECONNREFUSED', pg5433: 'ECONNREFUSED' });
      expect(probe.own).toEqual({ u: role, d: role });
      expect(probe.otherRole).toMatch(/only role .* can be reached from this deployment/);
      expect(probe.otherDb).toMatch(/only role .* can be reached from this deployment/);
      expect(probe.trace).toBe('200 traced');
      expect(traced).toEqual(['GET /api/v1/runs']);
      expect(out).toContain('proxy-env=http://127.0.0.1:3128 http://127.0.0.1:3128 127.0.0.1,localhost,::1');
      expect(out).toContain('allowed=allowed-body'); // a plain http request through the proxy
      // code/CONNECT code: through a CONNECT tunnel (-p) and as a plain proxied request.
      expect(out).toContain(`http://localhost:${allowedPort}/ 200/200`);
      expect(out).toContain(`http://localhost:${hostListener.port}/ 403/000`);
      expect(out).toContain(`http://127.0.0.1:${hostListener.port}/ 000/403`);
      expect(out).toContain('http://127.0.0.1:5432/ 000/403');
      expect(out).toContain('http://169.254.169.254/latest/meta-data/ 403/000');
      expect(out).toMatch(/direct=000/);
      expect(hostListener.connections()).toBe(0);
    });

    it("Node's fetch goes through the sandbox's proxy (preloaded by NODE_OPTIONS): an allowed destination answers, others are refused", async () => {
      // NO_PROXY emptied for this probe: the allowed host is on the host's loopback, which the sandbox's NO_PROXY sends direct.
      const FETCH = `
        const get = (url) => fetch(url).then(async (r) => r.status + ' ' + (await r.text()), (e) => 'refused ' + (e.cause?.message ?? e.message));
        (async () => {
          const out = { allowed: await get(process.env.ALLOWED_URL), refused: await get(process.env.REFUSED_URL), metadata: await get('http://169.254.169.254/latest/meta-data/') };
          console.log('FETCH ' + JSON.stringify(out));
        })();`;
      writeFileSync(join(app, 'fetch.js'), FETCH);
      const env = network.proxyEnv();
      expect(env.NODE_OPTIONS).toBe('--require /run/th/proxy-preload.js');
      const { code, out } = await run('NO_PROXY= no_proxy= node /app/fetch.js', {
        ...env,
        ALLOWED_URL: `http://localhost:${allowedPort}/`,
        REFUSED_URL: `http://127.0.0.1:${hostListener.port}/`,
      }, { network: { hostDir: network.hostDir, relayArgs: network.relayArgs() } });
      expect({ code, out }).toMatchObject({ code: 0 });
      const got = JSON.parse(/^FETCH (.*)$/m.exec(out)?.[1] ?? '{}') as Record<string, string>;
      expect(got.allowed).toBe('200 allowed-body');
      // The proxy answers the CONNECT with 403; undici reports the tunnel it could not open.
      expect(got.refused).toMatch(/^refused /);
      expect(got.metadata).toMatch(/^refused /);
      expect(hostListener.connections()).toBe(0);
    });

    it('the database relay refuses what is not a startup message of its role; a deployment over its connection bound is cut at accept', async () => {
      const sock = join(netDir, 'postgres.sock');
      const exchange = (bytes: Buffer) =>
        new Promise<Buffer>((res) => {
          const c = net.connect(sock);
          const got: Buffer[] = [];
          c.on('connect', () => c.write(bytes));
          c.on('data', (b: Buffer) => got.push(b));
          c.on('close', () => res(Buffer.concat(got)));
          c.on('error', () => undefined);
          setTimeout(() => c.destroy(), 3000).unref();
        });
      const startup = (params: string) => {
        const body = Buffer.from(params + '\0');
        const head = Buffer.alloc(8);
        head.writeInt32BE(body.length + 8, 0);
        head.writeInt32BE(196608, 4);
        return Buffer.concat([head, body]);
      };
      expect((await exchange(startup(`user\0${role}\0database\0${role}\0replication\0true\0`))).toString()).toContain('can be reached from this deployment');
      expect((await exchange(Buffer.from('GET / HTTP/1.1\r\n\r\n'))).toString()).toMatch(/invalid startup packet|unsupported frontend protocol/);
      const huge = Buffer.alloc(8);
      huge.writeInt32BE(1 << 30, 0);
      expect((await exchange(huge)).toString()).toContain('invalid startup packet');
      // SSLRequest: declined with 'N', then the startup message is judged as usual.
      const ssl = Buffer.alloc(8);
      ssl.writeInt32BE(8, 0);
      ssl.writeInt32BE(80877103, 4);
      const answer = await exchange(Buffer.concat([ssl, startup(`user\0postgres\0database\0${role}\0`)]));
      expect(answer.subarray(0, 1).toString()).toBe('N');
      expect(answer.toString()).toContain('can be reached from this deployment');

      const small = await SandboxNetwork.open(join(root, 'rev', 'net-small'), { trace: new URL(`http://127.0.0.1:${tracePort}`) }, new ConnectionBudget(2), { ...RELAY_LIMITS, idleTimeoutMs: 300 });
      try {
        const open = () => new Promise<net.Socket>((res) => { const c = net.connect(join(root, 'rev', 'net-small', 'trace.sock'), () => res(c)); c.on('error', () => undefined); });
        const [a, b, c] = [await open(), await open(), await open()];
        const closed = (s: net.Socket) => new Promise<boolean>((res) => (s.destroyed ? res(true) : s.once('close', () => res(true))));
        expect(await Promise.race([closed(c), new Promise((r) => setTimeout(() => r(false), 1000))])).toBe(true); // the third: over the bound
        expect(a.destroyed || b.destroyed).toBe(false);
        // Idle connections are cut after the idle timeout; their slots serve again.
        await Promise.all([closed(a), closed(b)]);
        const d = await open();
        d.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
        const reply = await new Promise<string>((res) => { let t = ''; d.on('data', (x: Buffer) => (t += x.toString())); d.on('close', () => res(t)); });
        expect(reply).toContain('traced');
      } finally {
        await small.close();
      }
      expect(readdirSync(join(root, 'rev')).includes('net-small')).toBe(false); // its sockets are gone with it
    });
  });

  it('limits memory, file size, /tmp, descriptors, processes and priority when limits are set', async () => {
    const MB = 1024 * 1024;
    const limited = new Sandbox({
      mode: 'bwrap', uid: UID, gid: UID, readOnlyPaths: [],
      limits: { memoryBytes: 256 * MB, fileSizeBytes: 1 * MB, tmpBytes: 2 * MB, processes: 64, openFiles: 256, nice: 10 },
    });
    const p = limited.spawn({
      argv: [
        'sh', '-c',
        [
          'grep -E "^Max (data size|file size|open files|processes)" /proc/self/limits',
          'echo "nice=$(cut -d" " -f19 /proc/self/stat)"',
          // A file past the size limit stops at it; /tmp fills at its size.
          'head -c 2000000 /dev/zero > /app/big 2>/dev/null; echo "big=$(wc -c < /app/big)"',
          'for i in 1 2 3; do head -c 900000 /dev/zero > /tmp/f$i 2>/dev/null || echo "tmp-full-at=$i"; done',
          // Writable memory past the limit is refused (V8 reports an allocation failure); below it works.
          `node -e "Buffer.alloc(64e6).fill(1); console.log('alloc-64MB-ok')"`,
          `node -e "const a = []; for (let i = 0; i < 40; i++) a.push(Buffer.alloc(10e6).fill(1)); console.log('alloc-400MB-ok')" 2>/dev/null || echo alloc-400MB-refused`,
        ].join('; '),
      ],
      appDir: app, homeDir: home, cwd: app, env: limited.baseEnv({ appDir: app, homeDir: home }, {}), output: 'pipe',
    });
    let out = '';
    p.child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
    p.child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
    await new Promise((res) => p.child.on('close', res));
    rmSync(join(app, 'big'), { force: true });
    expect(out).toMatch(/Max data size\s+268435456\s+268435456 /);
    expect(out).toMatch(/Max file size\s+1048576\s+1048576 /);
    expect(out).toMatch(/Max open files\s+256\s+256 /);
    // The process limit is that of the sandbox's own user, so it is set only when the service can switch to one.
    if (asRoot) expect(out).toMatch(/Max processes\s+64\s+64 /);
    expect(out).toContain('nice=10');
    expect(out).toContain(`big=${1 * MB}`);
    expect(out).toContain('tmp-full-at=3');
    expect(out).toContain('alloc-64MB-ok');
    expect(out).toContain('alloc-400MB-refused');
    expect(out).not.toContain('alloc-400MB-ok');
  });

  it('a command that drains on SIGTERM ends within the grace; one that ignores it is killed with its whole tree', async () => {
    const drains = sb.spawn({ argv: ['sh', '-c', 'trap "echo drained; exit 0" TERM; echo ready; sleep 60 & wait'], appDir: app, homeDir: home, cwd: app, env: sb.baseEnv({ appDir: app, homeDir: home }, {}), output: 'pipe' });
    let out = '';
    drains.child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
    expect(await drains.commandPid).toEqual(expect.any(Number));
    for (let i = 0; i < 100 && !out.includes('ready'); i++) await new Promise((r) => setTimeout(r, 50)); // a signal before the trap is lost
    let t0 = Date.now();
    await stopSandboxed(drains, 10_000);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(out).toContain('drained');

    const stubborn = sb.spawn({ argv: ['sh', '-c', 'trap "" TERM; (trap "" TERM; sleep 60) & sleep 60; wait'], appDir: app, homeDir: home, cwd: app, env: sb.baseEnv({ appDir: app, homeDir: home }, {}), output: 'ignore' });
    const pid = (await stubborn.commandPid) as number;
    const ns = readlinkSync(`/proc/${pid}/ns/pid`);
    await new Promise((r) => setTimeout(r, 200));
    expect(inNamespace(ns).length).toBeGreaterThanOrEqual(3); // sh, its sleep and the subshell's sleep
    t0 = Date.now();
    await stopSandboxed(stubborn, 800);
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(750);
    expect(took).toBeLessThan(4000);
    for (let i = 0; i < 40 && inNamespace(ns).length > 0; i++) await new Promise((r) => setTimeout(r, 50)); // zombies reaped by init
    expect(inNamespace(ns)).toEqual([]);
  });

  it('a control plane killed while its sandboxes start leaves no tenant code running (compiled: npm run build first)', async () => {
    // The compiled Sandbox in a child node process that kills itself 0-19 ms after starting a sandbox.
    const marker = `31.${Date.now() % 100000}`;
    const script = `
      const { Sandbox } = require(${JSON.stringify(join(__dirname, '..', '..', '..', '..', 'dist', 'libs', 'control-plane', 'src', 'rollout', 'sandbox.js'))});
      const sb = new Sandbox({ mode: 'bwrap', uid: ${UID}, gid: ${UID}, readOnlyPaths: [] });
      const job = { appDir: ${JSON.stringify(app)}, homeDir: ${JSON.stringify(home)} };
      sb.spawn({ argv: ['sleep', '${marker}'], ...job, cwd: job.appDir, env: sb.baseEnv(job, {}), output: 'ignore' });
      setTimeout(() => process.kill(process.pid, 'SIGKILL'), Number(process.argv[1]));`;
    for (let delay = 0; delay < 20; delay++) spawnSync(process.execPath, ['-e', script, String(delay)], { stdio: 'ignore', timeout: 10_000 });
    await new Promise((r) => setTimeout(r, 1500));
    const withMarker = (pred: (argv: string[]) => boolean) =>
      readdirSync('/proc').filter((p) => /^\d+$/.test(p) && (() => {
        try {
          const argv = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
          return argv.includes(marker) && pred(argv) && !readFileSync(`/proc/${p}/stat`, 'utf8').includes(') Z ');
        } catch {
          return false;
        }
      })());
    const running = withMarker((argv) => argv[0] === 'sleep');
    // What bwrap's --disable-userns may leave (a bwrap whose child never ran) is reaped by the next control plane.
    sb.reapOrphans(join(root, 'rev'));
    await new Promise((r) => setTimeout(r, 200));
    expect(withMarker((argv) => argv[0].endsWith('bwrap'))).toEqual([]);
    expect(running).toEqual([]);
  });

  it('hands unpacked sources to the sandbox user without following links out of them, and clears set-id bits', () => {
    if (!asRoot) return; // ownership changes need root (the service's own user needs none)
    const src = join(root, 'handover');
    mkdirSync(join(src, 'sub'), { recursive: true });
    writeFileSync(join(src, 'sub', 'tool'), '#!/bin/sh\n', { mode: 0o4755 });
    symlinkSync(secretDir, join(src, 'link-to-host'));
    sb.handOver(src);
    expect(statSync(join(src, 'sub', 'tool'))).toMatchObject({ uid: UID, gid: UID });
    expect(statSync(join(src, 'sub', 'tool')).mode & 0o7777).toBe(0o755);
    expect(lstatSync(join(src, 'link-to-host')).uid).toBe(UID);
    expect(statSync(join(secretDir, 'session-secret')).uid).toBe(0); // the link's target is not the tenant's
    expect(statSync(secretDir).uid).toBe(0);
  });

  it('unsafe-none runs the command directly, with host paths and only the environment it is given', async () => {
    const unsafe = new Sandbox({ mode: 'unsafe-none', uid: UID, gid: UID, readOnlyPaths: [] });
    expect(unsafe.unavailable()).toBeNull();
    const job = { appDir: app, homeDir: home };
    const p = unsafe.spawn({ argv: ['sh', '-c', 'pwd; echo "home=$HOME"; env | cut -d= -f1 | sort | tr "\\n" " "'], ...job, cwd: app, env: unsafe.baseEnv(job, { A: '1' }), output: 'pipe' });
    let out = '';
    p.child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
    await p.exited;
    await new Promise((r) => setTimeout(r, 50));
    expect(out).toContain(app);
    expect(out).toContain(`home=${home}`);
    expect(out.trim().split('\n').at(-1)?.trim().split(' ').filter((k) => !['PWD', 'SHLVL', 'OLDPWD', '_'].includes(k))).toEqual(['A', 'HOME', 'PATH']);
  });
});

