import { createHash, randomUUID } from 'node:crypto';
import type { AuditPublisher } from '@th/audit-client';
import type {
  HubDirectory,
  HubDirectoryCommit,
  HubDirectoryEntry,
  Identity,
  PromptCommitCreate,
  PromptCommitListed,
  PromptCommitPulled,
  PromptCommitTag,
  PromptRepo,
  PromptRepoCreate,
  PromptRepoListQuery,
  PromptRepoUpdate,
  PromptWebhookTrigger,
  WorkspaceChangedEvent,
} from '@th/contracts';
import { badRequest, conflict, forbidden, notFound } from '@th/platform';
import { Logger } from '@nestjs/common';
import type { CommitRow, HubReader, PromptHubRepository, RepoRow, TagRow } from './prompt-hub.repository';
import type { PromptEventListener } from './prompt-webhooks.service';
import { memberText } from './manifest-text';

/** The first segment of a manifest's `id` the hub accepts: LangChain's own serializable classes. */
const MANIFEST_NAMESPACES = new Set(['langchain', 'langchain_core', 'langsmith']);
const PLAYGROUND_ID = 'langsmith.playground.PromptPlayground';
const SEQUENCE_ID = ['langchain', 'schema', 'runnable', 'RunnableSequence'];
const MAX_DIRECTORY_ENTRIES = 5_000;

const reader = (identity: Identity): HubReader => ({ tenantId: identity.tenant_id, liker: identity.user_id ?? `tenant:${identity.tenant_id}` });

/** Content hash of a commit: its parent's hash and its manifest's text, so equal histories hash equally. */
export function commitHash(parentHash: string | null, manifestText: string): string {
  return createHash('sha256').update(`${parentHash ?? ''}\n${manifestText}`).digest('hex');
}

/** 400 (the hub's answer to a manifest of a type it does not load), with the hub's messages. */
export function checkManifest(manifest: Record<string, unknown>): void {
  const id = manifest.id;
  if (!Array.isArray(id) || id.length === 0 || !id.every((s) => typeof s === 'string' && s.length > 0)) throw badRequest('Manifest must have an id field');
  if (!MANIFEST_NAMESPACES.has(id[0] as string) || id.length < 2) throw badRequest(`Manifest type ${id.join('.')} is not supported`);
}

/**
 * The manifest a pull returns. Stored manifests come back as sent, except a prompt with a model attached
 * (the playground's `PromptPlayground`, or a `RunnableSequence` whose first step is a prompt): without
 * `include_model` the prompt alone, with it a `RunnableSequence` LangChain can load.
 */
export function manifestForPull(manifest: Record<string, unknown>, includeModel: boolean): Record<string, unknown> {
  const id = Array.isArray(manifest.id) ? manifest.id.join('.') : '';
  const kwargs = manifest.kwargs as Record<string, unknown> | undefined;
  const first = kwargs?.first;
  const isPlayground = id === PLAYGROUND_ID;
  const isPromptSequence = id === SEQUENCE_ID.join('.') && isPrompt(first);
  if (!isPlayground && !isPromptSequence) return manifest;
  if (!includeModel) return first as Record<string, unknown>;
  return isPlayground ? { ...manifest, id: SEQUENCE_ID } : manifest;
}

/**
 * manifestForPull over the stored text: the text itself, or the exact text of the prompt inside it. Only a
 * playground manifest pulled with its model is rebuilt (its `id` becomes RunnableSequence's).
 */
export function manifestTextForPull(text: string, includeModel: boolean): string {
  const manifest = JSON.parse(text) as Record<string, unknown>;
  const pulled = manifestForPull(manifest, includeModel);
  if (pulled === manifest) return text;
  if (pulled === (manifest.kwargs as Record<string, unknown>).first) {
    const kwargs = memberText(text, 'kwargs');
    const first = kwargs === null ? null : memberText(kwargs, 'first');
    if (first !== null) return first;
  }
  return JSON.stringify(pulled);
}

/** The model attached to a prompt (playground or prompt-first RunnableSequence): its kwargs and class name. */
export function attachedModel(manifest: Record<string, unknown>): { model_config: Record<string, unknown>; model_provider: string | null } | null {
  const kwargs = manifest.kwargs as Record<string, unknown> | undefined;
  if (manifestForPull(manifest, false) === manifest || typeof kwargs?.last !== 'object' || kwargs.last === null) return null;
  const last = kwargs.last as { id?: unknown; kwargs?: unknown };
  const id = Array.isArray(last.id) ? last.id : [];
  const provider = id.at(-1);
  return {
    model_config: typeof last.kwargs === 'object' && last.kwargs !== null ? (last.kwargs as Record<string, unknown>) : {},
    model_provider: typeof provider === 'string' ? provider : null,
  };
}

/** A pull's answer, its manifest spliced in as stored (JSON.stringify would rewrite 1.0, 1e3 and escapes). */
export function pulledJson(head: Omit<PromptCommitPulled, 'manifest'>, manifestText: string): string {
  return `{"manifest":${manifestText},${JSON.stringify(head).slice(1)}`;
}

function isPrompt(v: unknown): boolean {
  if (typeof v !== 'object' || v === null) return false;
  const id = (v as { id?: unknown }).id;
  return Array.isArray(id) && id.includes('prompts');
}

export class PromptHubService {
  private readonly logger = new Logger('prompt-hub');

  constructor(
    private readonly repo: PromptHubRepository,
    private readonly audit: AuditPublisher,
    /** Prompt webhooks; absent → no events. */
    private readonly events: PromptEventListener | null = null,
  ) {}

  /** Stages the webhooks' deliveries in `tx`, the transaction that stores the change. */
  private async emit(tx: PromptHubRepository, identity: Identity, r: RepoRow, c: CommitRow, event: PromptWebhookTrigger, tagName: string | null = null): Promise<void> {
    if (!this.events) return;
    const payload = {
      event,
      prompt_id: r.id,
      prompt_name: r.repo_handle,
      commit_hash: c.commit_hash,
      created_at: c.created_at.toISOString(),
      created_by: identity.user_id ?? identity.credential_id ?? '',
      manifest: JSON.parse(c.manifest) as Record<string, unknown>,
      tag_name: tagName,
    };
    await this.events.promptEvent(tx.db, r.tenant_id, payload);
  }

  /**
   * The caller's workspace handle: the gateway signs the workspace's current one into the identity (fresh after a
   * change); the copy kept from `workspaces` events answers for callers without it.
   */
  private async ownHandle(identity: Identity): Promise<string | null> {
    const signed = identity.workspace_settings?.tenant_handle;
    return signed !== undefined ? signed : this.repo.handleOf(identity.tenant_id);
  }

  /** A repo with its owner's handle; the caller's own repos carry the identity's (fresher) handle. */
  private async withOwner(identity: Identity, r: RepoRow): Promise<RepoRow> {
    return r.tenant_id === identity.tenant_id ? { ...r, owner: await this.ownHandle(identity) } : r;
  }

  /** A `workspaces` event: the hub's copy of the workspace's handle follows the workspace. */
  async workspaceChanged(e: WorkspaceChangedEvent): Promise<void> {
    await this.repo.applyWorkspaceHandle(e.workspace_id, e.deleted ? null : e.tenant_handle);
  }

  async listRepos(identity: Identity, q: PromptRepoListQuery): Promise<{ repos: PromptRepo[]; total: number }> {
    let owner: string | null = null;
    if (q.tenant_handle !== undefined) {
      owner = q.tenant_handle === '-' || q.tenant_handle === (await this.ownHandle(identity)) ? identity.tenant_id : await this.repo.tenantOfHandle(q.tenant_handle);
      if (owner === null) return { repos: [], total: 0 };
    }
    const { rows, total } = await this.repo.listRepos(reader(identity), q, owner);
    return { repos: (await Promise.all(rows.map((r) => this.withOwner(identity, r)))).map(presentRepo), total };
  }

  async createRepo(identity: Identity, body: PromptRepoCreate): Promise<{ repo: PromptRepo }> {
    if (body.is_public && !(await this.ownHandle(identity))) throw badRequest('A public prompt needs the workspace to have a tenant handle first (POST /settings/handle)');
    const id = await this.repo.insertRepo(identity.tenant_id, {
      repo_handle: body.repo_handle,
      description: body.description ?? null,
      readme: body.readme ?? null,
      tags: body.tags ?? [],
      is_public: body.is_public,
      repo_type: body.repo_type,
    });
    if (!id) throw conflict(`A prompt named ${body.repo_handle} already exists in this workspace`);
    return { repo: presentRepo(await this.withOwner(identity, (await this.repo.repoByHandle(reader(identity), identity.tenant_id, body.repo_handle))!)) };
  }

  async getRepo(identity: Identity, owner: string, handle: string): Promise<{ repo: PromptRepo }> {
    const r = await this.readable(identity, owner, handle);
    // Views are counted for readers from other workspaces: the owner's own lookups (every push makes one) are not views.
    if (r.tenant_id !== identity.tenant_id) {
      await this.repo.countView(r.id);
      r.num_views += 1;
    }
    return { repo: presentRepo(r) };
  }

  async updateRepo(identity: Identity, owner: string, handle: string, patch: PromptRepoUpdate): Promise<{ repo: PromptRepo }> {
    const r = await this.writable(identity, owner, handle);
    if (patch.is_public && !(await this.ownHandle(identity))) throw badRequest('A public prompt needs the workspace to have a tenant handle first (POST /settings/handle)');
    await this.repo.updateRepo(r.id, {
      ...(patch.description !== undefined ? { description: patch.description } : {}),
      ...(patch.readme !== undefined ? { readme: patch.readme } : {}),
      ...(patch.tags !== undefined ? { tags: patch.tags ?? [] } : {}),
      is_public: patch.is_public,
      is_archived: patch.is_archived,
    });
    return { repo: presentRepo(await this.withOwner(identity, (await this.repo.repoByHandle(reader(identity), r.tenant_id, handle))!)) };
  }

  async deleteRepo(identity: Identity, owner: string, handle: string): Promise<void> {
    const r = await this.writable(identity, owner, handle);
    await this.repo.deleteRepo(r.id);
  }

  /** A stale `parent_commit` (not the latest commit) is a 409: someone else committed first. */
  /** `rawManifest`: the manifest's text as the client sent it, stored and hashed as is. */
  async createCommit(identity: Identity, owner: string, handle: string, body: PromptCommitCreate, rawManifest: string | null = null): Promise<{ commit: PromptCommitListed }> {
    checkManifest(body.manifest);
    const manifestText = rawManifest ?? JSON.stringify(body.manifest);
    const { repo: r, row } = await this.commit(identity, owner, handle, body.parent_commit ?? null, body.description ?? null, (repo) => {
      if (repo.repo_type !== 'prompt') throw badRequest(`${handle} is an ${repo.repo_type}: commit its files to /v1/platform/hub/repos/{owner}/{repo}/directories/commits`);
      return manifestText;
    });
    return { commit: presentCommit(r.owner ?? '-', handle, row) };
  }

  /** A commit of an agent's or skill's files: the parent's entries, with these added, replaced or (null) deleted. */
  async pushDirectory(identity: Identity, owner: string, handle: string, body: HubDirectoryCommit): Promise<{ commit: PromptCommitListed }> {
    const { repo: r, row } = await this.commit(identity, owner, handle, body.parent_commit ?? null, body.description ?? null, (repo, latest) => {
      if (repo.repo_type === 'prompt') throw badRequest(`${handle} is a prompt: commit a manifest to /commits/{owner}/{repo}`);
      const files: Record<string, HubDirectoryEntry> = latest ? (JSON.parse(latest.manifest) as { files: Record<string, HubDirectoryEntry> }).files : {};
      for (const [path, entry] of Object.entries(body.files)) {
        if (entry === null) delete files[path];
        else files[path] = entry;
      }
      if (Object.keys(files).length > MAX_DIRECTORY_ENTRIES) throw badRequest(`A directory holds at most ${MAX_DIRECTORY_ENTRIES} entries`);
      return JSON.stringify({ files: Object.fromEntries(Object.entries(files).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) });
    });
    return { commit: presentCommit(r.owner ?? '-', handle, row) };
  }

  /** A pull of an agent's or skill's files at a commit (latest by default): counted as a download. */
  async pullDirectory(identity: Identity, owner: string, handle: string, ref: string | undefined): Promise<HubDirectory> {
    const r = await this.readable(identity, owner, handle);
    if (r.repo_type === 'prompt') throw badRequest(`${handle} is a prompt: pull it from /commits/{owner}/{repo}/{ref}`);
    const c = await this.resolveRef(r.id, ref ?? 'latest');
    await this.repo.countDownload(r.id, c.id);
    return { commit_id: c.id, commit_hash: c.commit_hash, files: (JSON.parse(c.manifest) as { files: Record<string, HubDirectoryEntry> }).files };
  }

  async deleteDirectory(identity: Identity, owner: string, handle: string): Promise<void> {
    const r = await this.writable(identity, owner, handle);
    if (r.repo_type === 'prompt') throw badRequest(`${handle} is a prompt: delete it with DELETE /repos/{owner}/{repo}`);
    await this.repo.deleteRepo(r.id);
  }

  /** The one way a commit lands: the repo row locked, the parent checked, the content hashed, then the webhooks told. */
  private async commit(
    identity: Identity,
    owner: string,
    handle: string,
    parentCommit: string | null,
    description: string | null,
    build: (r: RepoRow, latest: CommitRow | null) => string,
  ): Promise<{ repo: RepoRow; row: CommitRow }> {
    const ownerTenant = await this.ownerTenant(identity, owner);
    const done = await this.repo.transaction(async (tx) => {
      const locked = await tx.repoByHandle(reader(identity), ownerTenant, handle, true);
      if (!locked || (locked.tenant_id !== identity.tenant_id && !locked.is_public)) throw notFound('Prompt');
      const r = await this.withOwner(identity, locked);
      if (r.tenant_id !== identity.tenant_id) throw forbidden('Only the workspace that owns a prompt can commit to it');
      const latest = await tx.latestCommit(r.id);
      if (parentCommit && !latest?.commit_hash.startsWith(parentCommit)) {
        throw conflict(`parent_commit ${parentCommit} is not the latest commit of ${handle} (${latest ? latest.commit_hash : 'it has none'}): pull and commit again`);
      }
      const text = build(r, latest);
      if (latest && latest.manifest === text) throw conflict('Nothing to commit: the content is the same as the latest commit');
      const row = await tx.insertCommit(r.tenant_id, {
        id: randomUUID(),
        repo_id: r.id,
        commit_hash: commitHash(latest?.commit_hash ?? null, text),
        parent_id: latest?.id ?? null,
        parent_commit_hash: latest?.commit_hash ?? null,
        manifest: text,
        description,
      });
      await tx.touchRepo(r.id);
      await this.emit(tx, identity, r, row, 'commit');
      return { repo: r, row };
    });
    this.events?.committed();
    return done;
  }

  async listCommits(identity: Identity, owner: string, handle: string, limit: number, offset: number): Promise<{ commits: PromptCommitListed[]; total: number }> {
    const r = await this.readable(identity, owner, handle);
    const { rows, total } = await this.repo.listCommits(r.id, limit, offset);
    return { commits: rows.map((c) => presentCommit(r.owner ?? owner, handle, c)), total };
  }

  /** A pull: counted as a download of the repo and of the commit. */
  async pullCommit(identity: Identity, owner: string, handle: string, ref: string, includeModel: boolean): Promise<{ head: Omit<PromptCommitPulled, 'manifest'>; manifest: string }> {
    const r = await this.readable(identity, owner, handle);
    const c = await this.resolveRef(r.id, ref);
    await this.repo.countDownload(r.id, c.id);
    return {
      head: {
        owner: r.owner ?? owner,
        repo: handle,
        commit_hash: c.commit_hash,
        examples: [],
        description: c.description,
        model_config: null,
        model_provider: null,
        ...(includeModel ? attachedModel(JSON.parse(c.manifest) as Record<string, unknown>) : null),
      },
      manifest: manifestTextForPull(c.manifest, includeModel),
    };
  }

  async listTags(identity: Identity, owner: string, handle: string): Promise<PromptCommitTag[]> {
    const r = await this.readable(identity, owner, handle);
    return (await this.repo.listTags(r.id)).map(presentTag);
  }

  async getTag(identity: Identity, owner: string, handle: string, tagName: string): Promise<PromptCommitTag> {
    const r = await this.readable(identity, owner, handle);
    const t = await this.repo.tag(r.id, tagName);
    if (!t) throw notFound('Tag');
    return presentTag(t);
  }

  async createTag(identity: Identity, owner: string, handle: string, tagName: string, commitId: string): Promise<PromptCommitTag> {
    const r = await this.writable(identity, owner, handle);
    const c = await this.repo.commitById(r.id, commitId);
    if (!c) throw notFound('Commit');
    await this.repo.transaction(async (tx) => {
      if (!(await tx.insertTag(r.id, tagName, commitId))) throw conflict(`Tag ${tagName} already exists on ${handle}; move it with PATCH`);
      await this.emit(tx, identity, r, c, 'tag:create', tagName);
    });
    this.events?.committed();
    return presentTag((await this.repo.tag(r.id, tagName))!);
  }

  async moveTag(identity: Identity, owner: string, handle: string, tagName: string, commitId: string): Promise<PromptCommitTag> {
    const r = await this.writable(identity, owner, handle);
    const c = await this.repo.commitById(r.id, commitId);
    if (!c) throw notFound('Commit');
    await this.repo.transaction(async (tx) => {
      if (!(await tx.moveTag(r.id, tagName, commitId))) throw notFound('Tag');
      await this.emit(tx, identity, r, c, 'tag:update', tagName);
    });
    this.events?.committed();
    return presentTag((await this.repo.tag(r.id, tagName))!);
  }

  async deleteTag(identity: Identity, owner: string, handle: string, tagName: string): Promise<void> {
    const r = await this.writable(identity, owner, handle);
    if (!(await this.repo.deleteTag(r.id, tagName))) throw notFound('Tag');
  }

  async like(identity: Identity, owner: string, handle: string, like: boolean): Promise<{ likes: number }> {
    const r = await this.readable(identity, owner, handle);
    return { likes: await this.repo.setLike(r.id, reader(identity).liker, like) };
  }

  /** `latest`, then a tag, then a commit hash or an unambiguous prefix of one. */
  private async resolveRef(repoId: string, ref: string): Promise<CommitRow> {
    if (ref === 'latest') {
      const latest = await this.repo.latestCommit(repoId);
      if (!latest) throw notFound('Commit');
      return latest;
    }
    const tag = await this.repo.tag(repoId, ref);
    if (tag) return (await this.repo.commitById(repoId, tag.commit_id))!;
    if (/^[0-9a-f]{8,64}$/.test(ref)) {
      const found = await this.repo.commitsByHashPrefix(repoId, ref);
      if (found.length > 1) throw badRequest(`Commit hash prefix ${ref} is ambiguous`);
      if (found[0]) return found[0];
    }
    throw notFound('Commit');
  }

  private async ownerTenant(identity: Identity, owner: string): Promise<string> {
    if (owner === '-' || owner === (await this.ownHandle(identity))) return identity.tenant_id;
    const tenant = await this.repo.tenantOfHandle(owner);
    if (!tenant) throw notFound('Prompt');
    return tenant;
  }

  /** Another workspace's private prompt is a 404, as if it did not exist. */
  private async readable(identity: Identity, owner: string, handle: string): Promise<RepoRow> {
    const r = await this.repo.repoByHandle(reader(identity), await this.ownerTenant(identity, owner), handle);
    if (!r || (r.tenant_id !== identity.tenant_id && !r.is_public)) throw notFound('Prompt');
    return this.withOwner(identity, r);
  }

  private async writable(identity: Identity, owner: string, handle: string): Promise<RepoRow> {
    const r = await this.readable(identity, owner, handle);
    if (r.tenant_id !== identity.tenant_id) throw forbidden('Only the workspace that owns a prompt can change it');
    return r;
  }
}

function presentRepo(r: RepoRow): PromptRepo {
  return {
    id: r.id,
    repo_handle: r.repo_handle,
    full_name: `${r.owner ?? '-'}/${r.repo_handle}`,
    owner: r.owner,
    tenant_id: r.tenant_id,
    description: r.description,
    readme: r.readme,
    tags: r.tags,
    is_public: r.is_public,
    is_archived: r.is_archived,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
    num_likes: r.num_likes,
    num_downloads: r.num_downloads,
    num_views: r.num_views,
    num_commits: r.num_commits,
    last_commit_hash: r.last_commit_hash,
    liked_by_auth_user: r.liked_by_auth_user,
    original_repo_id: null,
    upstream_repo_id: null,
    original_repo_full_name: null,
    upstream_repo_full_name: null,
    repo_type: r.repo_type,
  };
}

function presentCommit(owner: string, repo: string, c: CommitRow): PromptCommitListed {
  return {
    id: c.id,
    owner,
    repo,
    repo_id: c.repo_id,
    parent_id: c.parent_id,
    parent_commit_hash: c.parent_commit_hash,
    commit_hash: c.commit_hash,
    manifest: JSON.parse(c.manifest) as Record<string, unknown>,
    description: c.description,
    examples: [],
    num_downloads: c.num_downloads,
    num_views: c.num_views,
    created_at: c.created_at.toISOString(),
  };
}

function presentTag(t: TagRow): PromptCommitTag {
  return { id: t.id, repo_id: t.repo_id, tag_name: t.tag_name, commit_id: t.commit_id, commit_hash: t.commit_hash, created_at: t.created_at.toISOString(), updated_at: t.updated_at.toISOString() };
}
