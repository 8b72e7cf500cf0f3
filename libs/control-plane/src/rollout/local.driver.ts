import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, openSync, closeSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Client } from 'pg';
import * as tar from 'tar';
import type { Secret } from '@th/contracts';
import { freePort } from '@th/platform';
import type { DeploymentRow, DeploymentRuntime, RevisionRow } from '../deployments/deployments.repository';
import type { UploadsRepository } from '../uploads/uploads.repository';
import { FrontProxy } from './front-proxy';
import type { GitSource } from './git-source';
import { RolloutError, type BuildResult, type DeployResult, type RolloutDriver, type SaveRuntime } from './driver';

export interface LocalDriverOptions {
  /** Builds, sources and server logs live under this directory. */
  workDir: string;
  /** PostgreSQL on which each deployment gets its own database (needs CREATE DATABASE). */
  databaseAdminUrl: string;
  /** argv that starts the agent server (configured by environment variables, see the agent-server app). */
  agentServerCommand: string[];
  /** Extra environment for every agent server (e.g. LANGSMITH_ENDPOINT for tracing to this service). */
  agentServerEnv: Record<string, string>;
  /** Environment for build commands and servers (PATH, HOME...), taken from the control plane's at boot. */
  baseEnv: Record<string, string>;
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

/**
 * Runs deployments on this machine: unpacks or clones the source, runs the install and build commands,
 * starts an agent server per revision on a free port, and moves the deployment's stable address to it
 * once GET /ok answers.
 */
export class LocalDriver implements RolloutDriver {
  readonly name = 'local';
  private readonly proxies = new Map<string, FrontProxy>();
  private readonly children = new Map<number, ChildProcess>();

  constructor(
    private readonly opts: LocalDriverOptions,
    private readonly uploads: UploadsRepository,
    private readonly git: GitSource,
  ) {}

  private deploymentDir(id: string) {
    return join(this.opts.workDir, id);
  }
  private revisionDir(d: DeploymentRow, r: { id: string }) {
    return join(this.deploymentDir(d.id), r.id);
  }

  async provision(d: DeploymentRow, save: SaveRuntime): Promise<DeploymentRuntime> {
    const name = dbName(d.id);
    const admin = new Client({ connectionString: this.opts.databaseAdminUrl });
    await admin.connect();
    try {
      const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (exists.rowCount === 0) await admin.query(`CREATE DATABASE "${name}"`);
    } catch (err) {
      throw new RolloutError(`could not create the deployment's database: ${(err as Error).message}`);
    } finally {
      await admin.end();
    }
    const url = new URL(this.opts.databaseAdminUrl);
    url.pathname = `/${name}`;
    const runtime: DeploymentRuntime = { ...d.runtime, database_name: name, database_url: url.toString() };
    await save(runtime);
    const front = await this.ensureFront(d.id, runtime.front_port ?? 0);
    const withFront: DeploymentRuntime = { ...runtime, front_port: front, url: `http://${this.opts.publicHost}:${front}` };
    await save(withFront);
    return withFront;
  }

  private async ensureFront(deploymentId: string, port: number): Promise<number> {
    const existing = this.proxies.get(deploymentId);
    if (existing) return port;
    const proxy = new FrontProxy();
    const bound = await proxy.listen(this.opts.host, port);
    this.proxies.set(deploymentId, proxy);
    return bound;
  }

  async build(d: DeploymentRow, r: RevisionRow): Promise<BuildResult> {
    const dir = this.revisionDir(d, r);
    const src = join(dir, 'src');
    rmSync(dir, { recursive: true, force: true }); // a resumed build starts clean
    mkdirSync(src, { recursive: true });
    let sha: string | null = null;
    if (d.source === 'internal_source') {
      const path = r.source_revision_config.source_tarball_path;
      const data = path ? await this.uploads.data(path) : null;
      if (!data) throw new RolloutError(`the source tarball ${path ?? ''} has not been uploaded`);
      const file = join(dir, 'source.tar.gz');
      writeFileSync(file, data);
      try {
        await tar.x({ file, cwd: src, strict: true });
      } catch (err) {
        throw new RolloutError(`could not unpack the source tarball: ${(err as Error).message}`);
      }
    } else if (d.source === 'git_host') {
      const repo = r.build.repo_url ?? d.source_config.repo_url;
      const ref = r.source_revision_config.repo_ref ?? 'main';
      const branch = ref.startsWith('refs/tags/') ? ref.slice('refs/tags/'.length) : ref.replace(/^refs\/heads\//, '');
      await this.run(await this.git.cloneArgv(repo ?? '', branch, src), dir, { GIT_TERMINAL_PROMPT: '0' }, 'git clone');
      sha = (await this.run(['git', 'rev-parse', 'HEAD'], src, {}, 'git rev-parse')).trim();
    } else {
      throw new RolloutError(`the local driver does not build source ${d.source}`);
    }
    const configPath = resolve(src, r.source_revision_config.langgraph_config_path ?? 'langgraph.json');
    if (!configPath.startsWith(src)) throw new RolloutError('langgraph_config_path leaves the source tree');
    if (!existsSync(configPath)) throw new RolloutError(`graph configuration ${r.source_revision_config.langgraph_config_path ?? ''} not found in the source`);
    let config: unknown;
    try {
      config = JSON.parse(readFileSync(configPath, 'utf8'));
    } catch (err) {
      throw new RolloutError(`graph configuration is not valid JSON: ${(err as Error).message}`);
    }
    const graphs = (config as { graphs?: unknown }).graphs;
    if (!graphs || typeof graphs !== 'object' || Object.keys(graphs).length === 0) throw new RolloutError('graph configuration has no graphs');
    const install = r.build.install_command ?? detectInstallCommand(src);
    if (install) await this.run(['sh', '-c', install], src, {}, `install (${install})`);
    if (r.build.build_command) await this.run(['sh', '-c', r.build.build_command], dirname(configPath), {}, `build (${r.build.build_command})`);
    writeFileSync(join(dir, 'graphs-config-path'), configPath);
    return { repo_commit_sha: sha };
  }

  /** Runs a build step with a time bound; fails with the tail of its output. */
  private run(argv: string[], cwd: string, env: Record<string, string>, what: string): Promise<string> {
    return new Promise((res, rej) => {
      const child = spawn(argv[0], argv.slice(1), { cwd, env: { ...this.opts.baseEnv, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      const keep = (b: Buffer) => (out = (out + b.toString()).slice(-4000));
      child.stdout.on('data', keep);
      child.stderr.on('data', keep);
      const timer = setTimeout(() => child.kill('SIGKILL'), this.opts.buildTimeoutMs);
      child.on('error', (e) => {
        clearTimeout(timer);
        rej(new RolloutError(`${what} could not start: ${e.message}`));
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        if (code === 0) res(out);
        else rej(new RolloutError(`${what} failed (${signal ? `killed by ${signal}` : `exit code ${String(code)}`}): ${out.trim().slice(-1500)}`));
      });
    });
  }

  async deploy(d: DeploymentRow, r: RevisionRow, secrets: Secret[], save: SaveRuntime): Promise<DeployResult> {
    const configFile = join(this.revisionDir(d, r), 'graphs-config-path');
    if (!existsSync(configFile)) throw new RolloutError('the revision has no build output');
    const runtime: DeploymentRuntime = { ...d.runtime, servers: { ...(d.runtime.servers ?? {}) } };
    const stale = runtime.servers?.[r.id];
    if (stale && alive(stale.pid)) process.kill(stale.pid, 'SIGKILL'); // left by a crashed control plane
    const port = await freePort();
    const pid = this.start(d, r, secrets, readFileSync(configFile, 'utf8'), port);
    runtime.servers = { ...runtime.servers, [r.id]: { port, pid } };
    await save(runtime);
    await this.waitHealthy(pid, port, join(this.revisionDir(d, r), 'server.log'));
    const front = await this.ensureFront(d.id, runtime.front_port ?? 0);
    this.proxies.get(d.id)?.point(port);
    const out: DeploymentRuntime = { ...runtime, front_port: front, url: `http://${this.opts.publicHost}:${front}` };
    await save(out);
    return { url: out.url as string, runtime: out };
  }

  private start(d: DeploymentRow, r: RevisionRow, secrets: Secret[], graphsConfig: string, port: number): number {
    const log = openSync(join(this.revisionDir(d, r), 'server.log'), 'a');
    const [cmd, ...args] = this.opts.agentServerCommand;
    const env: Record<string, string> = {
      ...this.opts.baseEnv,
      ...this.opts.agentServerEnv,
      ...Object.fromEntries(secrets.map((s) => [s.name, s.value])),
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: d.runtime.database_url ?? '',
      GRAPHS_CONFIG: graphsConfig,
      LANGSMITH_PROJECT: d.name,
    };
    const child = spawn(cmd, args, { cwd: dirname(graphsConfig), env, stdio: ['ignore', log, log] });
    closeSync(log);
    if (child.pid === undefined) throw new RolloutError(`could not start the agent server (${cmd})`);
    this.children.set(child.pid, child);
    child.once('exit', () => this.children.delete(child.pid as number));
    return child.pid;
  }

  private async waitHealthy(pid: number, port: number, logFile: string): Promise<void> {
    const deadline = Date.now() + this.opts.deployTimeoutMs;
    for (;;) {
      if (!alive(pid) || this.exited(pid)) {
        throw new RolloutError(`the agent server exited before it was healthy: ${tail(logFile)}`);
      }
      try {
        const res = await fetch(`http://127.0.0.1:${port}/ok`, { signal: AbortSignal.timeout(2000) });
        if (res.status === 200) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) {
        kill(pid);
        throw new RolloutError(`the agent server did not answer GET /ok within ${this.opts.deployTimeoutMs} ms: ${tail(logFile)}`);
      }
      await sleep(200);
    }
  }

  private exited(pid: number): boolean {
    const c = this.children.get(pid);
    return c ? c.exitCode !== null || c.signalCode !== null : false;
  }

  async retire(d: DeploymentRow, revisionId: string, save: SaveRuntime): Promise<void> {
    const s = d.runtime.servers?.[revisionId];
    if (!s) return;
    kill(s.pid);
    const servers = { ...(d.runtime.servers ?? {}) };
    delete servers[revisionId];
    await save({ ...d.runtime, servers });
  }

  async restore(d: DeploymentRow, r: RevisionRow, secrets: Secret[], save: SaveRuntime): Promise<DeploymentRuntime> {
    const s = d.runtime.servers?.[r.id];
    if (s && alive(s.pid)) {
      const ok = await fetch(`http://127.0.0.1:${s.port}/ok`, { signal: AbortSignal.timeout(2000) }).then((x) => x.status === 200, () => false);
      if (ok) {
        const front = await this.ensureFront(d.id, d.runtime.front_port ?? 0);
        this.proxies.get(d.id)?.point(s.port);
        const out = { ...d.runtime, front_port: front, url: `http://${this.opts.publicHost}:${front}` };
        await save(out);
        return out;
      }
      kill(s.pid);
    }
    return (await this.deploy(d, r, secrets, save)).runtime;
  }

  async teardown(d: DeploymentRow): Promise<void> {
    for (const s of Object.values(d.runtime.servers ?? {})) kill(s.pid);
    const proxy = this.proxies.get(d.id);
    this.proxies.delete(d.id);
    await proxy?.close();
    if (d.runtime.database_name) {
      const admin = new Client({ connectionString: this.opts.databaseAdminUrl });
      await admin.connect();
      try {
        await admin.query(`DROP DATABASE IF EXISTS "${d.runtime.database_name.replace(/"/g, '')}" WITH (FORCE)`);
      } finally {
        await admin.end();
      }
    }
    rmSync(this.deploymentDir(d.id), { recursive: true, force: true });
  }

  /** Stops the addresses this process serves; agent servers it started are stopped too (they restart on boot). */
  async close(): Promise<void> {
    for (const child of this.children.values()) child.kill('SIGTERM');
    await Promise.all([...this.proxies.values()].map((p) => p.close()));
    this.proxies.clear();
  }
}

function kill(pid: number): void {
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    // already gone
  }
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim().slice(-1500);
  } catch {
    return '';
  }
}
