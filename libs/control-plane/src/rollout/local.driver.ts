import { Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, openSync, closeSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { Client } from 'pg';
import * as tar from 'tar';
import type { Secret } from '@th/contracts';
import { freePort, type OutboundPolicy } from '@th/platform';
import type { DeploymentRow, DeploymentRuntime, RevisionRow } from '../deployments/deployments.repository';
import type { SecretsCipher } from '../secrets.cipher';
import type { UploadsRepository } from '../uploads/uploads.repository';
import type { DeploymentCallers } from './deployment-callers';
import { FrontProxy, type ServerAddress } from './front-proxy';
import type { GitSource } from './git-source';
import { RolloutError, RolloutInterrupted, type BuildResult, type DeployResult, type RolloutDriver, type SaveRuntime } from './driver';
import { Sandbox, stopSandboxed, LISTEN_FD, type SandboxedProcess, type SandboxOptions } from './sandbox';
import { createRunDir, removeStaleRunDirs } from './run-dir';
import { ConnectionBudget, INSIDE_PORTS, listeningSocketFor, RELAY_LIMITS, SandboxNetwork, type NetworkSpec } from './sandbox-network';

export interface LocalDriverOptions {
  /** Builds, sources and server logs live under this directory. */
  workDir: string;
  /** PostgreSQL on which each deployment gets its own database (needs CREATE DATABASE). */
  databaseAdminUrl: string;
  /** argv that starts the agent server (configured by environment variables, see the agent-server app). */
  agentServerCommand: string[];
  /** Extra environment for every agent server (e.g. LANGSMITH_ENDPOINT for tracing to this service; relayed when sandboxed). */
  agentServerEnv: Record<string, string>;
  /** Variables passed from the control plane's environment to builds and servers (LANG, TZ): never a secret. */
  baseEnv: Record<string, string>;
  /** How tenant code (builds, git, agent servers) is confined. */
  sandbox: SandboxOptions;
  /** How long a replaced revision's server may drain after SIGTERM before it is killed. */
  stopGraceMs: number;
  /** Listen address of the per-deployment front proxies. */
  host: string;
  /** Host name used in the deployment URLs. */
  publicHost: string;
  buildTimeoutMs: number;
  deployTimeoutMs: number;
}

/** Package-manager files and the install command each implies (the spec: autodetected when omitted). */
const INSTALLERS: [string, string][] = [
  ['pnpm-lock.yaml', 'pnpm install --frozen-lockfile'],
  ['yarn.lock', 'yarn install --frozen-lockfile'],
  ['bun.lockb', 'bun install --frozen-lockfile'],
  ['package-lock.json', 'npm ci'],
  ['package.json', 'npm install'],
];

export function detectInstallCommand(root: string): string | null {
  for (const [file, cmd] of INSTALLERS) if (existsSync(join(root, file))) return cmd;
  return null;
}

/** The deployment's database and the role that owns it (one name: th_agent_<hex>, safe to quote). */
const dbName = (deploymentId: string) => `th_agent_${deploymentId.replace(/-/g, '')}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

/** A revision's folders: the driver's own files in rev, the tenant's source in app and its HOME in home. */
interface RevisionDirs {
  rev: string;
  appDir: string;
  homeDir: string;
}

/** Moves the objects an upgraded database's admin created (before deployments had roles) to the deployment's role. */
const HAND_OVER_OBJECTS = (role: string) => `DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema' AND nspowner = (SELECT oid FROM pg_roles WHERE rolname = current_user) LOOP
    EXECUTE format('ALTER SCHEMA %I OWNER TO %I', r.nspname, '${role}');
  END LOOP;
  FOR r IN SELECT n.nspname, c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema' AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
      AND c.relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)
      AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i'))
  LOOP
    EXECUTE format('ALTER %s %I.%I OWNER TO %I', CASE r.relkind WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END, r.nspname, r.relname, '${role}');
  END LOOP;
END $$`;

/**
 * Runs deployments on this machine: unpacks or clones the source, runs the install and build commands,
 * starts an agent server per revision on a free port, and moves the deployment's stable address to it
 * once GET /ok answers. Everything the tenant supplies runs in the sandbox (sandbox.ts); each deployment's
 * database is owned by a role of its own that can reach no other database the driver manages.
 */
export class LocalDriver implements RolloutDriver {
  readonly name = 'local';
  private readonly proxies = new Map<string, FrontProxy>();
  /** Servers this process started, by the pid kept in the deployment's runtime. */
  private readonly servers = new Map<number, SandboxedProcess>();
  /** Each deployment's relayed connections, counted together across its builds and revisions. */
  private readonly budgets = new Map<string, ConnectionBudget>();
  /**
   * This process's folder of sandboxes' sockets: short, since a unix socket's path has at most 107 bytes (a
   * revision's folder under CONTROL_PLANE_DATA_DIR is longer). One subfolder per build or server, removed with it.
   */
  private runDir: string | null = null;
  /** Set by close(): a rollout still in flight starts nothing more (no server, no socket folder) after it. */
  private closed = false;
  private readonly sandbox: Sandbox;
  private reaped = false;
  private trustWarned = false;
  private readonly logger = new Logger('local-driver');

  constructor(
    private readonly opts: LocalDriverOptions,
    private readonly uploads: UploadsRepository,
    private readonly cipher: SecretsCipher,
    private readonly git: GitSource,
    /** Destinations of the sandboxes' outbound proxy (the operator's OUTBOUND_ALLOWED_HOSTS). */
    private readonly outbound: OutboundPolicy,
    private readonly callers: DeploymentCallers,
  ) {
    this.sandbox = new Sandbox(opts.sandbox);
  }

  private deploymentDir(id: string) {
    return join(this.opts.workDir, id);
  }
  private dirs(d: DeploymentRow, r: { id: string }): RevisionDirs {
    const rev = join(this.deploymentDir(d.id), r.id);
    return { rev, appDir: join(rev, 'src'), homeDir: join(rev, 'home') };
  }

  /** Tenant code runs only in the sandbox, unless an operator chose otherwise (AGENT_SANDBOX=unsafe-none). */
  private requireSandbox(): void {
    if (!this.reaped) {
      this.reaped = true;
      this.sandbox.reapOrphans(resolve(this.opts.workDir));
    }
    const why = this.sandbox.unavailable();
    if (why) {
      throw new RolloutError(
        `this installation cannot sandbox deployment code (${why}); it is not run. An operator can install bubblewrap, or set AGENT_SANDBOX=unsafe-none to run it with the control plane's own privileges (unsafe)`,
      );
    }
    // bwrap runs as the unprivileged user: it must be able to pass through the work folder's parents.
    if (this.sandbox.mode === 'bwrap' && process.getuid?.() === 0) {
      for (let dir = this.opts.workDir; ; dir = dirname(dir)) {
        if (existsSync(dir) && !(statSync(dir).mode & 0o001)) {
          throw new RolloutError('the sandbox user cannot reach the control plane\'s work folder: an operator must let others traverse CONTROL_PLANE_DATA_DIR and its parents (chmod o+x)');
        }
        if (dirname(dir) === dir) break;
      }
    }
  }

  async provision(d: DeploymentRow, save: SaveRuntime): Promise<DeploymentRuntime> {
    this.requireOpen();
    // Named before it exists: a control plane stopped between the two still knows which database is the deployment's.
    await save({ ...d.runtime, database_name: dbName(d.id) });
    const runtime = await this.provisionDatabase(d);
    await save(runtime);
    const front = await this.ensureFront(d, runtime.front_port ?? 0);
    const withFront: DeploymentRuntime = { ...runtime, front_port: front, url: `http://${this.opts.publicHost}:${front}` };
    await save(withFront);
    return withFront;
  }

  /**
   * The deployment's database, owned by its own login role (no superuser, no CREATEDB/CREATEROLE) with a random
   * password kept sealed in the runtime. Nobody else gets CONNECT on it, and PUBLIC loses CONNECT on the admin
   * connection's database (the service's, by default) so the role cannot log in there either.
   */
  private async provisionDatabase(d: DeploymentRow): Promise<DeploymentRuntime> {
    const name = dbName(d.id);
    const password = randomBytes(24).toString('base64url');
    const admin = new Client({ connectionString: this.opts.databaseAdminUrl });
    await admin.connect();
    let existed = false;
    try {
      const role = await admin.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [name]);
      const attrs = `LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT PASSWORD ${admin.escapeLiteral(password)}`;
      await admin.query(role.rowCount === 0 ? `CREATE ROLE "${name}" ${attrs}` : `ALTER ROLE "${name}" ${attrs}`);
      const { rows } = await admin.query<{ su: boolean }>('SELECT rolsuper AS su FROM pg_roles WHERE rolname = current_user');
      if (!rows[0]?.su) await admin.query(`GRANT "${name}" TO CURRENT_USER`); // a CREATEROLE admin must be a member to give it a database
      existed = ((await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount ?? 0) > 0;
      // template0: nothing another role may have put in template1 (CREATE on its public schema before PostgreSQL 15).
      if (!existed) await admin.query(`CREATE DATABASE "${name}" OWNER "${name}" TEMPLATE template0`);
      else await admin.query(`ALTER DATABASE "${name}" OWNER TO "${name}"`);
      await admin.query(`REVOKE ALL ON DATABASE "${name}" FROM PUBLIC`);
      await this.closeAdminDatabase(admin);
    } catch (err) {
      throw new RolloutError(`could not create the deployment's database: ${(err as Error).message}`);
    } finally {
      await admin.end();
    }
    if (existed) await this.handOverObjects(name);
    await this.warnIfTrusted(name);
    const { database_url: _plain, ...rest } = d.runtime; // before roles, the runtime held the admin's URL in clear
    return { ...rest, database_name: name, database_role: name, database_password: this.cipher.seal(password) };
  }

  /** PUBLIC keeps no CONNECT on the admin's database; every login role that had it (but deployments') keeps it by name. */
  private async closeAdminDatabase(admin: Client): Promise<void> {
    const { rows } = await admin.query<{ db: string; open: boolean }>(
      `SELECT datname AS db, datacl IS NULL OR EXISTS (SELECT 1 FROM aclexplode(datacl) a WHERE a.grantee = 0 AND a.privilege_type = 'CONNECT') AS open
       FROM pg_database WHERE datname = current_database()`,
    );
    if (!rows[0]?.open) return;
    const db = admin.escapeIdentifier(rows[0].db);
    const { rows: roles } = await admin.query<{ r: string }>(
      `SELECT rolname AS r FROM pg_roles WHERE rolcanlogin AND NOT rolsuper AND rolname NOT LIKE 'th\\_agent\\_%' AND rolname <> current_user`,
    );
    for (const { r } of roles) await admin.query(`GRANT CONNECT ON DATABASE ${db} TO ${admin.escapeIdentifier(r)}`);
    await admin.query(`REVOKE CONNECT ON DATABASE ${db} FROM PUBLIC`);
  }

  /** A server that lets the role in with a wrong password trusts every local login: the roles then separate nothing. */
  private async warnIfTrusted(role: string): Promise<void> {
    if (this.trustWarned) return;
    const url = new URL(this.opts.databaseAdminUrl);
    url.username = role;
    url.password = 'not-the-password';
    url.pathname = `/${role}`;
    const c = new Client({ connectionString: url.toString() });
    const accepted = await c.connect().then(() => true, () => false);
    await c.end().catch(() => undefined);
    if (!accepted) return;
    this.trustWarned = true;
    this.logger.warn({
      msg: "AGENT_DATABASE_URL's PostgreSQL accepts logins without the password (trust authentication): only the sandbox's database relay keeps deployments' code to its own role (with AGENT_SANDBOX=unsafe-none, nothing does). Use password (scram-sha-256) authentication for connections from this host.",
    });
  }

  private async handOverObjects(name: string): Promise<void> {
    const url = new URL(this.opts.databaseAdminUrl);
    url.pathname = `/${name}`;
    const c = new Client({ connectionString: url.toString() });
    await c.connect();
    try {
      await c.query(HAND_OVER_OBJECTS(name));
    } catch (err) {
      throw new RolloutError(`could not give the deployment's database to its role: ${(err as Error).message}`);
    } finally {
      await c.end();
    }
  }

  /** The deployment's DATABASE_URL: its own role on its own database (relayed: through the namespace's loopback port). */
  private databaseUrl(runtime: DeploymentRuntime, relayed: boolean): string {
    if (!runtime.database_role || !runtime.database_password || !runtime.database_name) throw new RolloutError('the deployment has no database role');
    const url = new URL(relayed ? `postgres://127.0.0.1:${INSIDE_PORTS.postgres}` : this.opts.databaseAdminUrl);
    url.username = runtime.database_role;
    url.password = this.cipher.open(runtime.database_password);
    url.pathname = `/${runtime.database_name}`;
    return url.toString();
  }

  private async ensureFront(d: DeploymentRow, port: number): Promise<number> {
    const existing = this.proxies.get(d.id);
    if (existing) return port;
    const owner = { id: d.id, tenant_id: d.tenant_id };
    const proxy = new FrontProxy((headers) => this.callers.check(headers, owner));
    const bound = await proxy.listen(this.opts.host, port);
    this.proxies.set(d.id, proxy);
    return bound;
  }

  private budget(deploymentId: string): ConnectionBudget {
    let b = this.budgets.get(deploymentId);
    if (!b) this.budgets.set(deploymentId, (b = new ConnectionBudget(RELAY_LIMITS.maxConnections)));
    return b;
  }

  private requireOpen(): void {
    if (this.closed) throw new RolloutInterrupted('the control plane is stopping');
  }

  /** A new folder for one sandbox's sockets (traversable: the sandbox's bwrap binds its relays from there). */
  private socketDir(): string {
    this.requireOpen();
    if (!this.runDir) {
      // Folders of control planes that crashed (their sockets and relays' folders) go before this one is made.
      const stale = removeStaleRunDirs();
      if (stale.length > 0) this.logger.log(`removed ${stale.length} socket folder(s) of stopped control planes`);
      this.runDir = createRunDir();
      process.once('exit', this.removeRunDir);
    }
    const dir = join(this.runDir, randomBytes(6).toString('hex'));
    mkdirSync(dir, { mode: 0o711 });
    return dir;
  }

  /** A sandbox's relays (bwrap only: unsafe-none shares the host's network), in `dir`/net. */
  private async network(d: DeploymentRow, dir: string, spec: NetworkSpec): Promise<SandboxNetwork | null> {
    if (this.sandbox.mode === 'unsafe-none') return null;
    return SandboxNetwork.open(join(dir, 'net'), spec, this.budget(d.id));
  }

  async build(d: DeploymentRow, r: RevisionRow): Promise<BuildResult> {
    this.requireOpen();
    this.requireSandbox();
    const dirs = this.dirs(d, r);
    rmSync(dirs.rev, { recursive: true, force: true }); // a resumed build starts clean
    mkdirSync(this.deploymentDir(d.id), { recursive: true, mode: 0o711 });
    mkdirSync(dirs.rev, { mode: 0o711 });
    mkdirSync(dirs.appDir);
    mkdirSync(dirs.homeDir);
    // Builds reach the internet (package registries, git hosts) through the outbound proxy only.
    const sockets = this.sandbox.mode === 'unsafe-none' ? null : this.socketDir();
    try {
      const net = sockets ? await this.network(d, sockets, { proxy: this.outbound }) : null;
      try {
        return await this.buildIn(d, r, dirs, net);
      } finally {
        await net?.close();
      }
    } finally {
      if (sockets) rmSync(sockets, { recursive: true, force: true });
    }
  }

  private async buildIn(d: DeploymentRow, r: RevisionRow, dirs: RevisionDirs, net: SandboxNetwork | null): Promise<BuildResult> {
    const src = dirs.appDir;
    let sha: string | null = null;
    if (d.source === 'internal_source') {
      const path = r.source_revision_config.source_tarball_path;
      const data = path ? await this.uploads.data(path) : null;
      if (!data) throw new RolloutError(`the source tarball ${path ?? ''} has not been uploaded`);
      const file = join(dirs.rev, 'source.tar.gz');
      writeFileSync(file, data, { mode: 0o600 });
      try {
        await tar.x({ file, cwd: src, strict: true, preserveOwner: false });
      } catch (err) {
        throw new RolloutError(`could not unpack the source tarball: ${scrub((err as Error).message, dirs)}`);
      }
      this.sandbox.handOver(src);
      this.sandbox.handOver(dirs.homeDir);
    } else if (d.source === 'git_host') {
      this.sandbox.handOver(src);
      this.sandbox.handOver(dirs.homeDir);
      const repo = r.build.repo_url ?? d.source_config.repo_url ?? '';
      const ref = r.source_revision_config.repo_ref ?? 'main';
      const branch = ref.startsWith('refs/tags/') ? ref.slice('refs/tags/'.length) : ref.replace(/^refs\/heads\//, '');
      const [git, ...args] = await this.git.cloneArgv(repo, branch, '.'); // checked against the outbound policy just before
      const local = this.localRepository(repo);
      // safe.directory: a local repository belongs to another user than the sandbox's.
      await this.run([git, '-c', 'safe.directory=*', ...args], dirs, src, 'git clone', net, local ? [local] : []);
      sha = (await this.run(['git', 'rev-parse', 'HEAD'], dirs, src, 'git rev-parse', null)).trim();
    } else {
      throw new RolloutError(`the local driver does not build source ${d.source}`);
    }
    const configRel = r.source_revision_config.langgraph_config_path ?? 'langgraph.json';
    const configPath = this.insideSource(src, configRel);
    let config: unknown;
    try {
      config = JSON.parse(readFileSync(configPath, 'utf8'));
    } catch {
      throw new RolloutError(`graph configuration ${configRel} is not valid JSON`); // the parser's message quotes the file
    }
    const graphs = (config as { graphs?: unknown }).graphs;
    if (!graphs || typeof graphs !== 'object' || Object.keys(graphs).length === 0) throw new RolloutError('graph configuration has no graphs');
    const install = r.build.install_command ?? detectInstallCommand(src);
    if (install) await this.run(['sh', '-c', install], dirs, src, `install (${install})`, net);
    if (r.build.build_command) await this.run(['sh', '-c', r.build.build_command], dirs, dirname(configPath), `build (${r.build.build_command})`, net);
    // Checked again after the tenant's commands ran (they may have replaced the file with a link).
    writeFileSync(join(dirs.rev, 'graphs-config-path'), relative(src, this.insideSource(src, configRel)), { mode: 0o600 });
    return { repo_commit_sha: sha };
  }

  /**
   * A path of the tenant's source, read by this process: it must exist and stay inside the source once links are
   * resolved (a link to a host file would otherwise be read with the control plane's rights).
   */
  private insideSource(src: string, rel: string): string {
    const path = resolve(src, rel);
    if (!path.startsWith(src + sep)) throw new RolloutError('langgraph_config_path leaves the source tree');
    let real: string;
    try {
      real = realpathSync(path);
    } catch {
      throw new RolloutError(`graph configuration ${rel} not found in the source`);
    }
    if (!real.startsWith(realpathSync(src) + sep)) throw new RolloutError(`graph configuration ${rel} links outside the source tree`);
    return real;
  }

  /** A repository URL that is a folder on this machine, made readable to the clone; never the driver's own work folder. */
  private localRepository(repo: string): string | null {
    const path = repo.startsWith('file://') ? decodeURIComponent(new URL(repo).pathname) : isAbsolute(repo) ? repo : null;
    if (!path || !existsSync(path)) return null;
    const real = realpathSync(path);
    const work = resolve(this.opts.workDir);
    if (real === work || real.startsWith(work + sep)) throw new RolloutError('repo_url names a folder of the control plane');
    return real;
  }

  /** Runs a build step in the sandbox with a time bound; fails with the tail of its output. */
  private run(argv: string[], dirs: RevisionDirs, cwd: string, what: string, net: SandboxNetwork | null, readOnly: string[] = []): Promise<string> {
    return new Promise((res, rej) => {
      const env = { ...this.sandbox.baseEnv(dirs, this.opts.baseEnv), ...net?.proxyEnv() };
      const network = net ? { hostDir: net.hostDir, relayArgs: net.relayArgs() } : undefined;
      const p = this.sandbox.spawn({ argv, appDir: dirs.appDir, homeDir: dirs.homeDir, cwd, env, readOnly, output: 'pipe', network });
      const child = p.child;
      let out = '';
      const keep = (b: Buffer) => (out = (out + b.toString()).slice(-4000));
      child.stdout?.on('data', keep);
      child.stderr?.on('data', keep);
      const timer = setTimeout(() => void stopSandboxed(p, 0), this.opts.buildTimeoutMs);
      child.on('error', (e) => {
        clearTimeout(timer);
        rej(new RolloutError(`${what} could not start: ${e.message}`));
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        if (code === 0) res(out);
        else rej(new RolloutError(`${what} failed (${signal ? `killed by ${signal}` : `exit code ${String(code)}`}): ${scrub(out.trim(), dirs).slice(-3000)}`));
      });
    });
  }

  async deploy(d: DeploymentRow, r: RevisionRow, secrets: Secret[], save: SaveRuntime): Promise<DeployResult> {
    this.requireOpen();
    this.requireSandbox();
    const dirs = this.dirs(d, r);
    const configFile = join(dirs.rev, 'graphs-config-path');
    if (!existsSync(configFile)) throw new RolloutError('the revision has no build output');
    // A deployment provisioned before databases had roles gets one now.
    if (!d.runtime.database_role) {
      d.runtime = { ...(await this.provisionDatabase(d)), servers: d.runtime.servers };
      await save(d.runtime);
    }
    const runtime: DeploymentRuntime = { ...d.runtime, servers: { ...(d.runtime.servers ?? {}) } };
    const stale = runtime.servers?.[r.id];
    if (stale) await this.stop(stale.pid, 0); // left by a crashed control plane
    const stored = readFileSync(configFile, 'utf8');
    const { pid, address } = await this.start(d, r, secrets, isAbsolute(stored) ? relative(dirs.appDir, stored) : stored);
    runtime.servers = { ...runtime.servers, [r.id]: 'port' in address ? { port: address.port, pid } : { socket: address.socketPath, pid } };
    await save(runtime);
    await this.waitHealthy(pid, address, join(dirs.rev, 'server.log'), dirs);
    const front = await this.ensureFront(d, runtime.front_port ?? 0);
    this.proxies.get(d.id)?.point(address);
    const out: DeploymentRuntime = { ...runtime, front_port: front, url: `http://${this.opts.publicHost}:${front}` };
    await save(out);
    return { url: out.url as string, runtime: out };
  }

  /**
   * Starts the revision's agent server. Sandboxed: in its own network namespace, listening on a unix socket of its
   * revision folder that the control plane made and hands over, reaching its database, tracing and the internet
   * only through the relays. unsafe-none: on a free loopback port, with the host's network.
   */
  private async start(d: DeploymentRow, r: RevisionRow, secrets: Secret[], configRel: string): Promise<{ pid: number; address: ServerAddress }> {
    this.requireOpen();
    const dirs = this.dirs(d, r);
    const configPath = this.insideSource(dirs.appDir, configRel);
    const graphsConfig = this.sandbox.inside(dirs, configPath);
    const sockets = this.sandbox.mode === 'unsafe-none' ? null : this.socketDir();
    const cleanUp = () => sockets && rmSync(sockets, { recursive: true, force: true });
    const tracing = this.opts.agentServerEnv.LANGSMITH_ENDPOINT;
    let net: SandboxNetwork | null = null;
    let listening: Awaited<ReturnType<typeof listeningSocketFor>> | null = null;
    let p: SandboxedProcess;
    let address: ServerAddress;
    try {
      if (sockets) net = await this.network(d, sockets, { postgres: this.databaseTarget(d.runtime), trace: tracing ? new URL(tracing) : undefined, proxy: this.outbound });
      address = sockets ? { socketPath: join(sockets, 'agent.sock') } : { port: await freePort() };
      if ('socketPath' in address) listening = await listeningSocketFor(address.socketPath);
      // The agent server's documented variables and the deployment's own secrets: nothing else of the service's.
      const env: Record<string, string> = {
        ...this.sandbox.baseEnv(dirs, this.opts.baseEnv),
        ...this.opts.agentServerEnv,
        ...(net && tracing ? { LANGSMITH_ENDPOINT: relayedUrl(new URL(tracing), INSIDE_PORTS.trace) } : {}),
        ...net?.proxyEnv(),
        ...Object.fromEntries(secrets.map((s) => [s.name, s.value])),
        // The operator's outbound allow-list is not the tenant's to widen with a secret of the same name.
        OUTBOUND_ALLOWED_HOSTS: this.opts.agentServerEnv.OUTBOUND_ALLOWED_HOSTS ?? '',
        ...('port' in address ? { PORT: String(address.port), HOST: '127.0.0.1' } : { LISTEN_SOCKET: `fd:${LISTEN_FD}` }),
        DATABASE_URL: this.databaseUrl(d.runtime, net !== null),
        GRAPHS_CONFIG: graphsConfig,
        LANGSMITH_PROJECT: d.name,
      };
      const log = openSync(join(dirs.rev, 'server.log'), 'a', 0o600);
      try {
        p = this.sandbox.spawn({
          argv: this.opts.agentServerCommand,
          appDir: dirs.appDir,
          homeDir: dirs.homeDir,
          cwd: dirname(configPath),
          env,
          output: log,
          network: net ? { hostDir: net.hostDir, relayArgs: net.relayArgs() } : undefined,
          listenFd: listening?.fd,
        });
      } finally {
        closeSync(log);
      }
    } catch (err) {
      await net?.close();
      cleanUp();
      throw err;
    } finally {
      await listening?.release(); // the server holds its own copy of the descriptor
    }
    const pid = p.child.pid;
    if (pid === undefined) {
      await net?.close();
      cleanUp();
      throw new RolloutError('could not start the agent server');
    }
    this.servers.set(pid, p);
    const relays = net;
    void p.exited.then(async () => {
      this.servers.delete(pid);
      await relays?.close();
      cleanUp();
    });
    return { pid, address };
  }

  /** Where the deployment's database relay connects: the admin URL's server (a unix socket folder in ?host= too). */
  private databaseTarget(runtime: DeploymentRuntime): NetworkSpec['postgres'] {
    const url = new URL(this.opts.databaseAdminUrl);
    const socketDir = url.searchParams.get('host');
    const host = socketDir?.startsWith('/') ? socketDir : decodeURIComponent(url.hostname.replace(/^\[|\]$/g, '')) || 'localhost';
    return { host, port: Number(url.port) || 5432, user: runtime.database_role ?? '', database: runtime.database_name ?? '' };
  }

  private async waitHealthy(pid: number, address: ServerAddress, logFile: string, dirs: RevisionDirs): Promise<void> {
    const deadline = Date.now() + this.opts.deployTimeoutMs;
    for (;;) {
      if (!alive(pid) || this.exited(pid)) {
        throw new RolloutError(`the agent server exited before it was healthy: ${scrub(tail(logFile), dirs)}`);
      }
      if ((await okStatus(address)) === 200) return;
      if (Date.now() > deadline) {
        await this.stop(pid, 0);
        throw new RolloutError(`the agent server did not answer GET /ok within ${this.opts.deployTimeoutMs} ms: ${scrub(tail(logFile), dirs)}`);
      }
      await sleep(200);
    }
  }

  private exited(pid: number): boolean {
    const p = this.servers.get(pid);
    return p ? p.child.exitCode !== null || p.child.signalCode !== null : false;
  }

  /**
   * Drain, then kill: a server this process started gets SIGTERM and graceMs to finish, then its whole sandbox is
   * killed. A pid from before a restart is only signalled without a sandbox (with one it died with the old process).
   */
  private async stop(pid: number, graceMs: number): Promise<void> {
    const p = this.servers.get(pid);
    if (p) return stopSandboxed(p, graceMs);
    if (this.sandbox.mode !== 'unsafe-none') return;
    signal(pid, 'SIGTERM');
    for (const until = Date.now() + graceMs; Date.now() < until && alive(pid); ) await sleep(100);
    signal(pid, 'SIGKILL');
  }

  /** Stops a replaced or unfinished revision's server: returns at once, the drain runs to its bound in the background. */
  async retire(d: DeploymentRow, revisionId: string, save: SaveRuntime): Promise<void> {
    const s = d.runtime.servers?.[revisionId];
    if (!s) return;
    void this.stop(s.pid, this.opts.stopGraceMs).catch(() => undefined); // stopping never throws; no rejection may go unhandled
    const servers = { ...(d.runtime.servers ?? {}) };
    delete servers[revisionId];
    await save({ ...d.runtime, servers });
  }

  async restore(d: DeploymentRow, r: RevisionRow, secrets: Secret[], save: SaveRuntime): Promise<DeploymentRuntime> {
    const s = d.runtime.servers?.[r.id];
    // Without a sandbox a server can outlive a control-plane restart; sandboxed ones die with it.
    if (s?.port && this.sandbox.mode === 'unsafe-none' && alive(s.pid)) {
      const ok = (await okStatus({ port: s.port })) === 200;
      if (ok) {
        const front = await this.ensureFront(d, d.runtime.front_port ?? 0);
        this.proxies.get(d.id)?.point({ port: s.port });
        const out = { ...d.runtime, front_port: front, url: `http://${this.opts.publicHost}:${front}` };
        await save(out);
        return out;
      }
      await this.stop(s.pid, 0);
    }
    return (await this.deploy(d, r, secrets, save)).runtime;
  }

  async teardown(d: DeploymentRow): Promise<void> {
    await Promise.all(Object.values(d.runtime.servers ?? {}).map((s) => this.stop(s.pid, 0)));
    const proxy = this.proxies.get(d.id);
    this.proxies.delete(d.id);
    this.budgets.delete(d.id);
    await proxy?.close();
    const name = dbName(d.id);
    const admin = new Client({ connectionString: this.opts.databaseAdminUrl });
    await admin.connect();
    try {
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await admin.query(`DROP ROLE IF EXISTS "${name}"`);
    } finally {
      await admin.end();
    }
    rmSync(this.deploymentDir(d.id), { recursive: true, force: true });
  }

  /** Stops the addresses this process serves and the servers it started, each within the drain bound (they restart on boot). */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.servers.keys()].map((pid) => this.stop(pid, this.opts.stopGraceMs)));
    await Promise.all([...this.proxies.values()].map((p) => p.close()));
    this.proxies.clear();
    this.removeRunDir();
    process.removeListener('exit', this.removeRunDir);
  }

  /** Also run at the process's exit: a shutdown that fails or exits early leaves no folder behind (a kill -9 does; the next start removes it). */
  private readonly removeRunDir = (): void => {
    if (this.runDir) rmSync(this.runDir, { recursive: true, force: true });
    this.runDir = null;
  };
}

/** The status of GET /ok at a server, 0 when it does not answer (yet). */
function okStatus(address: ServerAddress): Promise<number> {
  return new Promise((res) => {
    const where = 'socketPath' in address ? { socketPath: address.socketPath } : { host: '127.0.0.1', port: address.port };
    const req = http.get({ ...where, path: '/ok', timeout: 2000, agent: false }, (r) => {
      r.resume();
      res(r.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => res(0));
  });
}

/** The URL as a sandbox reaches it: the same path on the relay's loopback port (the relay does TLS when it is https). */
function relayedUrl(url: URL, port: number): string {
  return `http://127.0.0.1:${port}${url.pathname.replace(/\/$/, '')}${url.search}`;
}

/** Host paths of the revision's folders, as the tenant sees them (or hidden) in messages it can read. */
function scrub(text: string, dirs: RevisionDirs): string {
  return text.split(dirs.appDir).join('/app').split(dirs.homeDir).join('/home/app').split(dirs.rev).join('<revision>');
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim().slice(-1500);
  } catch {
    return '';
  }
}
