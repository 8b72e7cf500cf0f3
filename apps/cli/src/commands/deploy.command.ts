import { TERMINAL_REVISION_STATUSES, type Deployment, type DeploymentCreateRequest, type DeploymentPatchRequest, type GitHostInstall, type Revision, type UploadUrl } from '@th/contracts';
import type { ApiClient } from '../api-client';
import { read, type Command, type Context } from '../command';
import { CommandFailed, UsageError } from '../errors';
import { Progress, printRecord, sleep } from '../output';
import { collectSecrets, folderName, packFolder } from '../source-pack';
import { DEPLOYMENT_ROUTES as R, findDeployment } from './deployments.command';

type Secrets = DeploymentCreateRequest['secrets'] | undefined;

interface Plan {
  name: string;
  config: string;
  secrets: Secrets;
  build: { build_command?: string; install_command?: string };
}

const POLL_MS = 500;

async function deploy(ctx: Context): Promise<number> {
  const v = ctx.values;
  const repo = read.str(v, 'repo');
  const image = read.str(v, 'image');
  const dir = ctx.positionals[0];
  if ([repo, image, dir].filter((x) => x !== undefined).length > 1) throw new UsageError('deploy from one of: a folder, --repo or --image');
  const folder = repo === undefined && image === undefined ? (dir ?? '.') : undefined;
  if (read.str(v, 'ref') && !repo) throw new UsageError('--ref goes with --repo');
  const name = read.str(v, 'name') ?? (folder !== undefined ? folderName(folder) : undefined);
  if (!name) throw new UsageError('--name is required when deploying from --repo or --image');
  const build = { build_command: read.str(v, 'build-command'), install_command: read.str(v, 'install-command') };
  if (image && (build.build_command || build.install_command)) throw new UsageError('--build-command and --install-command do not apply to --image');
  const plan: Plan = { name, config: read.str(v, 'config') ?? 'langgraph.json', secrets: collectSecrets(read.str(v, 'env-file'), read.list(v, 'secret')), build };
  const timeoutMs = read.seconds(v, 'timeout', 600);

  const client = ctx.client();
  const existing = await findDeployment(client, name);
  let dep: Deployment;
  if (folder !== undefined) dep = await fromFolder(ctx, client, plan, existing, folder);
  else if (repo !== undefined) dep = await fromRepo(client, plan, existing, repo, read.str(v, 'ref') ?? 'main');
  else dep = await fromImage(client, plan, existing, image as string, read.str(v, 'listener-id'));
  const revisionId = dep.latest_revision_id;
  if (!revisionId) throw new CommandFailed(`deployment ${name} has no revision to wait for`);
  ctx.io.stderr.write(`${existing ? 'updated' : 'created'} deployment ${name} (${dep.id}), revision ${revisionId}\n`);

  if (v['no-wait']) {
    if (ctx.mode === 'json') printRecord(ctx.io, 'json', { deployment_id: dep.id, name, revision_id: revisionId, status: 'QUEUED', url: dep.source_config.custom_url });
    else ctx.io.stdout.write(`${revisionId}\n`);
    return 0;
  }
  const rev = await waitForRevision(ctx, client, dep.id, revisionId, timeoutMs);
  const live = await client.call<Deployment>(R.get, { params: { deployment_id: dep.id } });
  const url = live.source_config.custom_url;
  const result = { deployment_id: dep.id, name, revision_id: rev.id, status: rev.status, status_message: rev.status_message, url };
  if (rev.status !== 'DEPLOYED') {
    if (ctx.mode === 'json') printRecord(ctx.io, 'json', result);
    const what = rev.status === 'BUILD_FAILED' ? 'build failed' : rev.status === 'DEPLOY_FAILED' ? 'deploy failed' : `revision ${rev.status}`;
    throw new CommandFailed(`${what}: ${rev.status_message}`);
  }
  if (ctx.mode === 'json') printRecord(ctx.io, 'json', result);
  else ctx.io.stdout.write(`${url ?? ''}\n`);
  return 0;
}

/** Polls the revision until it ends, showing each status; a revision that does not end in time is a failure. */
async function waitForRevision(ctx: Context, client: ApiClient, deploymentId: string, revisionId: string, timeoutMs: number): Promise<Revision> {
  const progress = new Progress(ctx.io);
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      const rev = await client.call<Revision>(R.revision, { params: { deployment_id: deploymentId, revision_id: revisionId } });
      progress.update(rev.status, rev.status_message);
      // REPLACED: it deployed, and a newer revision has since replaced it.
      if (TERMINAL_REVISION_STATUSES.includes(rev.status)) return rev.status === 'REPLACED' ? { ...rev, status: 'DEPLOYED' } : rev;
      if (Date.now() > deadline) throw new CommandFailed(`revision ${revisionId} did not finish within ${timeoutMs / 1000}s (last status ${rev.status})`);
      await sleep(POLL_MS);
    }
  } finally {
    progress.stop();
  }
}

function sameSource(existing: Deployment | null, source: Deployment['source']): void {
  if (existing && existing.source !== source) throw new UsageError(`deployment ${existing.name} deploys from ${existing.source}, not ${source}: use another --name`);
}

const withBuild = (b: Plan['build']) => (b.build_command || b.install_command ? b : {});

async function fromFolder(ctx: Context, client: ApiClient, plan: Plan, existing: Deployment | null, folder: string): Promise<Deployment> {
  sameSource(existing, 'internal_source');
  const { data, files } = await packFolder(folder);
  let dep = existing;
  if (!dep) {
    const body: DeploymentCreateRequest = {
      name: plan.name,
      source: 'internal_source',
      source_config: withBuild(plan.build),
      source_revision_config: { langgraph_config_path: plan.config },
      secrets: plan.secrets ?? [],
    };
    dep = await client.call<Deployment>(R.create, { body });
  }
  const issued = await client.call<UploadUrl>(R.uploadUrl, { params: { deployment_id: dep.id } });
  ctx.io.stderr.write(`uploading ${files} files (${(data.length / 1024).toFixed(1)} KiB)\n`);
  await client.upload(issued.upload_url, data);
  const patch: DeploymentPatchRequest = {
    source_revision_config: { source_tarball_path: issued.object_path, langgraph_config_path: plan.config },
    ...(existing && plan.secrets ? { secrets: plan.secrets } : {}),
    ...(existing && (plan.build.build_command || plan.build.install_command) ? { source_config: plan.build } : {}),
  };
  return client.call<Deployment>(R.patch, { params: { deployment_id: dep.id }, body: patch });
}

async function fromRepo(client: ApiClient, plan: Plan, existing: Deployment | null, repo: string, ref: string): Promise<Deployment> {
  sameSource(existing, 'git_host');
  if (existing) {
    if (existing.source_config.repo_url !== repo) throw new UsageError(`deployment ${existing.name} deploys ${existing.source_config.repo_url}, not ${repo}`);
    const patch: DeploymentPatchRequest = {
      source_revision_config: { repo_ref: ref, langgraph_config_path: plan.config },
      ...(plan.secrets ? { secrets: plan.secrets } : {}),
      ...(plan.build.build_command || plan.build.install_command ? { source_config: plan.build } : {}),
    };
    return client.call<Deployment>(R.patch, { params: { deployment_id: existing.id }, body: patch });
  }
  const { integration_id } = await client.call<GitHostInstall>(R.gitInstall);
  const body: DeploymentCreateRequest = {
    name: plan.name,
    source: 'git_host',
    source_config: { integration_id, repo_url: repo, deployment_type: 'dev', build_on_push: false, ...withBuild(plan.build) },
    source_revision_config: { repo_ref: ref, langgraph_config_path: plan.config },
    secrets: plan.secrets ?? [],
  };
  return client.call<Deployment>(R.create, { body });
}

async function fromImage(client: ApiClient, plan: Plan, existing: Deployment | null, image: string, listenerId: string | undefined): Promise<Deployment> {
  sameSource(existing, 'external_docker');
  if (existing) {
    const patch: DeploymentPatchRequest = { source_revision_config: { image_uri: image }, ...(plan.secrets ? { secrets: plan.secrets } : {}) };
    return client.call<Deployment>(R.patch, { params: { deployment_id: existing.id }, body: patch });
  }
  const body: DeploymentCreateRequest = {
    name: plan.name,
    source: 'external_docker',
    source_config: listenerId ? { listener_id: listenerId } : {},
    source_revision_config: { image_uri: image },
    secrets: plan.secrets ?? [],
  };
  return client.call<Deployment>(R.create, { body });
}

export const DEPLOY_COMMAND: Command = {
  path: ['deploy'],
  summary: 'Create or update a deployment from a folder, a git repository or an image, and wait until it serves',
  args: '[folder]',
  arity: [0, 1],
  options: {
    name: { type: 'string', short: 'n' },
    config: { type: 'string', short: 'c' },
    repo: { type: 'string' },
    ref: { type: 'string' },
    image: { type: 'string' },
    'listener-id': { type: 'string' },
    secret: { type: 'string', multiple: true, short: 's' },
    'env-file': { type: 'string' },
    'build-command': { type: 'string' },
    'install-command': { type: 'string' },
    'no-wait': { type: 'boolean' },
    timeout: { type: 'string' },
  },
  help: [
    ['[folder]', 'pack this folder and upload it (default: the current folder)'],
    ['--repo <url>', 'build this git repository instead'],
    ['--ref <ref>', 'with --repo: the branch or refs/tags/<tag> (default main)'],
    ['--image <uri>', 'deploy this image instead (self-hosted control plane with a Kubernetes listener)'],
    ['--listener-id <id>', 'with --image: the listener to deploy to'],
    ['-n, --name <name>', 'the deployment (created when missing, else updated; default: the folder name)'],
    ['-c, --config <path>', 'the graph configuration, relative to the source (default langgraph.json)'],
    ['-s, --secret KEY=VALUE', 'a secret environment variable (repeatable; replaces all secrets on update)'],
    ['--env-file <file>', 'secrets from a KEY=VALUE file (--secret wins)'],
    ['--install-command <cmd>', 'how to install dependencies (default: from the lock file)'],
    ['--build-command <cmd>', 'a build step run in the configuration folder'],
    ['--no-wait', 'print the revision id and exit once the revision is queued'],
    ['--timeout <seconds>', 'give up waiting after this long (default 600): exit 1'],
  ],
  notes: `
The folder is packed without .git, node_modules and .env. Progress goes to stderr (a status line at a terminal, one
line per status change otherwise); when the revision is DEPLOYED the deployment's address is printed on stdout
(--json: {deployment_id, name, revision_id, status, status_message, url}). A failed build or start exits 1 with
the build's message.`,
  printsValue: true,
  run: deploy,
};
