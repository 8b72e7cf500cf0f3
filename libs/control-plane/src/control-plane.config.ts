import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { bool, outboundConfigShape, secret } from '@th/config';
import type { ControlPlaneOptions } from './control-plane.options';
import { SANDBOX_MODES } from './rollout/sandbox';

const MB = 1024 * 1024;

/** The control plane's settings (one zod shape; the standalone and cluster apps parse it at boot). */
export const controlPlaneConfigShape = {
  /** cloud: git_host offered, external_docker refused; self_hosted: the reverse. */
  CONTROL_PLANE_INSTALLATION: z.enum(['cloud', 'self_hosted']).default('self_hosted'),
  CONTROL_PLANE_SECRETS_KEY: secret(z.string().min(16).optional()),
  CONTROL_PLANE_PUBLIC_URL: z.string().url().optional(),
  CONTROL_PLANE_DATA_DIR: z.string().optional(),
  /** PostgreSQL where each deployment's own database is created (default: DATABASE_URL). */
  AGENT_DATABASE_URL: secret(z.string().url().optional()),
  /** JSON array: the command that starts an agent server (default: node scripts/run.js agent-server). */
  AGENT_SERVER_COMMAND: z.string().optional(),
  /** Where deployed agent servers send their traces (LANGSMITH_ENDPOINT). */
  AGENT_TRACING_ENDPOINT: z.string().url().optional(),
  /** Where the local driver's per-deployment front proxies listen (default: 127.0.0.1, or the app's own host in standalone). */
  AGENT_BIND_HOST: z.string().min(1).optional(),
  /**
   * Cluster form: the gateway's address, through which deployment addresses verify their callers' API keys (the
   * control plane holds no keys). Unset in the standalone app, which verifies them in process.
   */
  AGENT_KEY_CHECK_URL: z.string().url().optional(),
  /** Host name in the deployment URLs the local driver hands out (default: the bind host; 127.0.0.1 when that is 0.0.0.0). */
  AGENT_PUBLIC_HOST: z.string().min(1).optional(),
  /**
   * How the local driver confines tenant code (install/build commands, git, agent servers). bwrap: bubblewrap
   * namespaces as AGENT_SANDBOX_UID; rollouts fail where it cannot run. unsafe-none: no sandbox at all, the code runs
   * with the control plane's user and can read its files: only for a single trusted tenant.
   */
  AGENT_SANDBOX: z.enum(SANDBOX_MODES).default('bwrap'),
  /** The unprivileged user and group sandboxed code runs as when the control plane runs as root. */
  AGENT_SANDBOX_UID: z.coerce.number().int().min(1).default(65534),
  AGENT_SANDBOX_GID: z.coerce.number().int().min(1).default(65534),
  /** Comma-separated host paths sandboxed code may also read (a custom AGENT_SERVER_COMMAND's code). */
  AGENT_SANDBOX_READ_ONLY_PATHS: z.string().optional(),
  /** Writable memory of each sandboxed process (MB), its largest file (MB), its private /tmp (MB), and the processes and threads of the sandbox user in all sandboxes together. */
  AGENT_SANDBOX_MEMORY_MB: z.coerce.number().int().min(64).default(4096),
  AGENT_SANDBOX_FILE_SIZE_MB: z.coerce.number().int().min(1).default(2048),
  AGENT_SANDBOX_TMP_MB: z.coerce.number().int().min(1).default(512),
  AGENT_SANDBOX_PROCESSES: z.coerce.number().int().min(16).default(4096),
  /** How long a replaced revision's agent server may drain (SIGTERM) before it is killed with its whole sandbox. */
  AGENT_STOP_GRACE_MS: z.coerce.number().int().min(0).default(30_000),
  ROLLOUT_WORKER: bool(true),
  ROLLOUT_POLL_MS: z.coerce.number().int().min(50).default(2000),
  ROLLOUT_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  BUILD_TIMEOUT_MS: z.coerce.number().int().min(1000).default(600_000),
  DEPLOY_TIMEOUT_MS: z.coerce.number().int().min(1000).default(120_000),
  K8S_READY_TIMEOUT_MS: z.coerce.number().int().min(1000).default(600_000),
  UPLOAD_TTL_SECONDS: z.coerce.number().int().min(10).default(3600),
  MAX_TARBALL_BYTES: z.coerce.number().int().min(1024).default(200 * 1024 * 1024),
  /** Private hosts git repositories may be cloned from; also passed to the agent servers the local driver starts (their run webhooks). */
  ...outboundConfigShape,
  /** Let git_host deployments clone local paths and file:// URLs (this machine's files): for tests and single-user installs only. */
  GIT_ALLOW_LOCAL_REPOS: bool(false),
};
export const controlPlaneConfigSchema = z.object(controlPlaneConfigShape);
export type ControlPlaneConfig = z.infer<typeof controlPlaneConfigSchema>;

/** The repository root (holds scripts/run.js), from this file in src (jest) or dist. */
export function findRepoRoot(from = __dirname): string {
  let dir = from;
  for (let i = 0; i < 8; i++) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'tracehouse') return dir;
    dir = dirname(dir);
  }
  return resolve('.');
}

export function controlPlaneOptionsFromConfig(
  c: ControlPlaneConfig,
  ctx: { databaseUrl: string; dataDir: string; secretsKey?: string; host?: string; env: Record<string, string | undefined> },
): ControlPlaneOptions {
  const secretsKey = c.CONTROL_PLANE_SECRETS_KEY ?? ctx.secretsKey;
  if (!secretsKey) throw new Error('CONTROL_PLANE_SECRETS_KEY is required');
  // Only what is not a secret: sandboxed code gets its own PATH, HOME and TMPDIR (sandbox.ts).
  const baseEnv: Record<string, string> = {};
  for (const k of ['LANG', 'TZ']) {
    const v = ctx.env[k];
    if (v !== undefined) baseEnv[k] = v;
  }
  const root = findRepoRoot();
  const command = c.AGENT_SERVER_COMMAND ? (JSON.parse(c.AGENT_SERVER_COMMAND) as string[]) : [process.execPath, join(root, 'scripts', 'run.js'), 'agent-server'];
  return {
    installation: c.CONTROL_PLANE_INSTALLATION,
    secretsKey,
    publicUrl: c.CONTROL_PLANE_PUBLIC_URL ?? null,
    maxTarballBytes: c.MAX_TARBALL_BYTES,
    uploadTtlSeconds: c.UPLOAD_TTL_SECONDS,
    rolloutWorker: c.ROLLOUT_WORKER,
    rolloutPollMs: c.ROLLOUT_POLL_MS,
    rolloutConcurrency: c.ROLLOUT_CONCURRENCY,
    local: {
      workDir: resolve(c.CONTROL_PLANE_DATA_DIR ?? join(ctx.dataDir, 'control-plane')),
      databaseAdminUrl: c.AGENT_DATABASE_URL ?? ctx.databaseUrl,
      agentServerCommand: command,
      agentServerEnv: {
        // Graph modules unpacked outside the repository resolve @langchain/langgraph from the project's node_modules.
        NODE_PATH: join(root, 'node_modules'),
        ...(c.AGENT_TRACING_ENDPOINT ? { LANGSMITH_ENDPOINT: c.AGENT_TRACING_ENDPOINT, LANGSMITH_TRACING: 'true' } : {}),
        ...(c.OUTBOUND_ALLOWED_HOSTS ? { OUTBOUND_ALLOWED_HOSTS: c.OUTBOUND_ALLOWED_HOSTS } : {}),
      },
      baseEnv,
      sandbox: {
        mode: c.AGENT_SANDBOX,
        uid: c.AGENT_SANDBOX_UID,
        gid: c.AGENT_SANDBOX_GID,
        limits: {
          memoryBytes: c.AGENT_SANDBOX_MEMORY_MB * MB,
          fileSizeBytes: c.AGENT_SANDBOX_FILE_SIZE_MB * MB,
          tmpBytes: c.AGENT_SANDBOX_TMP_MB * MB,
          processes: c.AGENT_SANDBOX_PROCESSES,
          openFiles: 65_536,
          nice: 10,
        },
        // The default agent-server command's code and node's own install (when it is not under /usr).
        readOnlyPaths: [
          ...[dirname(dirname(realpathSync(process.execPath)))].filter((p) => p !== '/' && p !== '/usr' && !p.startsWith('/usr/')),
          ...['dist', 'scripts', 'node_modules'].map((p) => join(root, p)),
          ...(c.AGENT_SANDBOX_READ_ONLY_PATHS ?? '').split(',').map((p) => p.trim()).filter(Boolean),
        ],
      },
      stopGraceMs: c.AGENT_STOP_GRACE_MS,
      host: c.AGENT_BIND_HOST ?? ctx.host ?? '127.0.0.1',
      publicHost: c.AGENT_PUBLIC_HOST ?? ((c.AGENT_BIND_HOST ?? ctx.host ?? '127.0.0.1') === '0.0.0.0' ? '127.0.0.1' : (c.AGENT_BIND_HOST ?? ctx.host ?? '127.0.0.1')),
      buildTimeoutMs: c.BUILD_TIMEOUT_MS,
      deployTimeoutMs: c.DEPLOY_TIMEOUT_MS,
    },
    k8s: { readyTimeoutMs: c.K8S_READY_TIMEOUT_MS },
    outbound: { allowedHosts: c.OUTBOUND_ALLOWED_HOSTS, allowLocalRepos: c.GIT_ALLOW_LOCAL_REPOS },
    callers: { gatewayUrl: c.AGENT_KEY_CHECK_URL ?? null },
  };
}
