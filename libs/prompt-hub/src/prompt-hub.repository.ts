import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import type { HubRepoType, PromptRepoListQuery } from '@th/contracts';

export const PROMPT_HUB_SCHEMA = 'prompt_hub';

/** A repo as stored, with the figures derived from its commits and likes. */
export interface RepoRow {
  id: string;
  tenant_id: string;
  repo_handle: string;
  repo_type: HubRepoType;
  owner: string | null;
  description: string | null;
  readme: string | null;
  tags: string[];
  is_public: boolean;
  is_archived: boolean;
  num_likes: number;
  num_downloads: number;
  num_views: number;
  num_commits: number;
  last_commit_hash: string | null;
  liked_by_auth_user: boolean;
  created_at: Date;
  updated_at: Date;
}

export interface CommitRow {
  id: string;
  repo_id: string;
  commit_hash: string;
  parent_id: string | null;
  parent_commit_hash: string | null;
  /** The manifest's JSON text as received. */
  manifest: string;
  description: string | null;
  num_downloads: number;
  num_views: number;
  created_at: Date;
}

export interface TagRow {
  id: string;
  repo_id: string;
  tag_name: string;
  commit_id: string;
  commit_hash: string;
  created_at: Date;
  updated_at: Date;
}

/** Who is reading: the workspace, and the liker key (the user when known, else the workspace). */
export interface HubReader {
  tenantId: string;
  liker: string;
}

const REPO_COLUMNS = `r.id, r.tenant_id, r.repo_handle, r.repo_type, h.handle AS owner, r.description, r.readme, r.tags, r.is_public, r.is_archived,
  r.num_likes, r.num_downloads, r.num_views, r.created_at, r.updated_at,
  (SELECT count(*)::int FROM prompt_hub.commits c WHERE c.repo_id = r.id) AS num_commits,
  (SELECT c.commit_hash FROM prompt_hub.commits c WHERE c.repo_id = r.id ORDER BY c.seq DESC LIMIT 1) AS last_commit_hash,
  EXISTS (SELECT 1 FROM prompt_hub.likes l WHERE l.repo_id = r.id AND l.liker = $1) AS liked_by_auth_user`;
const REPO_FROM = `FROM prompt_hub.repos r LEFT JOIN prompt_hub.handles h ON h.tenant_id = r.tenant_id`;
const COMMIT_COLUMNS = `id, repo_id, commit_hash, parent_id, parent_commit_hash, manifest, description, num_downloads, num_views, created_at`;

/** `%` and `_` are literal in the user's search text. */
const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

const SORT_COLUMNS: Record<PromptRepoListQuery['sort_field'], string> = {
  num_downloads: 'r.num_downloads',
  num_views: 'r.num_views',
  updated_at: 'r.updated_at',
  num_likes: 'r.num_likes',
};

/** A DataSource or a transaction's EntityManager. */
type Queryable = Pick<EntityManager, 'query' | 'transaction'>;

/** The WHERE of a repo listing, its parameters numbered from `base + 1`. */
function repoFilter(reader: HubReader, q: PromptRepoListQuery, base: number, ownerTenantId: string | null): { cond: string; params: unknown[] } {
  const params: unknown[] = [reader.tenantId];
  const next = (v: unknown) => `$${base + params.push(v)}`;
  const tenant = `$${base + 1}`;
  const readable = `(r.is_public OR r.tenant_id = ${tenant})`;
  const where =
    ownerTenantId === null ? [q.is_public === true ? readable : `r.tenant_id = ${tenant}`] : [`r.tenant_id = ${next(ownerTenantId)}`, readable];
  if (q.is_public !== undefined) where.push(`r.is_public = ${q.is_public ? 'true' : 'false'}`);
  if (q.is_archived !== undefined) where.push(`r.is_archived = ${q.is_archived ? 'true' : 'false'}`);
  if (q.query) {
    const p = next(q.match_prefix ? `${likeEscape(q.query)}%` : `%${likeEscape(q.query)}%`);
    where.push(q.match_prefix ? `r.repo_handle ILIKE ${p}` : `(r.repo_handle ILIKE ${p} OR coalesce(r.description, '') ILIKE ${p})`);
  }
  if (q.tags && q.tags.length > 0) where.push(`r.tags @> ${next(q.tags)}::text[]`);
  where.push(`r.repo_type = ${next(q.repo_type)}`);
  return { cond: where.join(' AND '), params };
}

/** The only code that speaks SQL to the `prompt_hub` schema. */
export class PromptHubRepository {
  /** Also lent to the prompt webhooks, which stage deliveries in the same transaction. */
  constructor(readonly db: Queryable) {}

  transaction<T>(fn: (tx: PromptHubRepository) => Promise<T>): Promise<T> {
    return this.db.transaction((m: EntityManager) => fn(new PromptHubRepository(m)));
  }

  /** `prompt_hub.handles` is a copy of the workspaces' tenant handles, kept from the gateway's `workspaces` events. */
  async handleOf(tenantId: string): Promise<string | null> {
    const rows: { handle: string }[] = await this.db.query(`SELECT handle FROM prompt_hub.handles WHERE tenant_id = $1`, [tenantId]);
    return rows[0]?.handle ?? null;
  }

  async tenantOfHandle(handle: string): Promise<string | null> {
    const rows: { tenant_id: string }[] = await this.db.query(`SELECT tenant_id FROM prompt_hub.handles WHERE handle = $1`, [handle]);
    return rows[0]?.tenant_id ?? null;
  }

  /**
   * Applies a workspace's current handle (null: none, or the workspace is gone). A handle moves between workspaces
   * only through the owner, which keeps it unique, so a row still naming it for another workspace is stale.
   */
  async applyWorkspaceHandle(tenantId: string, handle: string | null): Promise<void> {
    if (handle === null) {
      await this.db.query(`DELETE FROM prompt_hub.handles WHERE tenant_id = $1`, [tenantId]);
      return;
    }
    await this.db.query(`DELETE FROM prompt_hub.handles WHERE handle = $1 AND tenant_id <> $2`, [handle, tenantId]);
    await this.db.query(
      `INSERT INTO prompt_hub.handles (tenant_id, handle, created_at) VALUES ($1, $2, now()) ON CONFLICT (tenant_id) DO UPDATE SET handle = EXCLUDED.handle`,
      [tenantId, handle],
    );
  }

  async insertRepo(tenantId: string, r: { repo_handle: string; repo_type: HubRepoType; description: string | null; readme: string | null; tags: string[]; is_public: boolean }): Promise<string | null> {
    const rows: { id: string }[] = await this.db.query(
      `INSERT INTO prompt_hub.repos (id, tenant_id, repo_handle, repo_type, description, readme, tags, is_public, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now(), now()) ON CONFLICT (tenant_id, repo_handle) DO NOTHING RETURNING id`,
      [randomUUID(), tenantId, r.repo_handle, r.repo_type, r.description, r.readme, r.tags, r.is_public],
    );
    return rows[0]?.id ?? null;
  }

  async repoByHandle(reader: HubReader, ownerTenantId: string, repoHandle: string, lock = false): Promise<RepoRow | null> {
    const rows: RepoRow[] = await this.db.query(
      `SELECT ${REPO_COLUMNS} ${REPO_FROM} WHERE r.tenant_id = $2 AND r.repo_handle = $3 ${lock ? 'FOR UPDATE OF r' : ''}`,
      [reader.liker, ownerTenantId, repoHandle],
    );
    return rows[0] ?? null;
  }

  /** The reader's own repos, or (is_public = true) every public repo; with an owner, that workspace's (public ones unless the reader's). */
  async listRepos(reader: HubReader, q: PromptRepoListQuery, ownerTenantId: string | null = null): Promise<{ rows: RepoRow[]; total: number }> {
    const count = repoFilter(reader, q, 0, ownerTenantId);
    const totalRows: { n: number }[] = await this.db.query(`SELECT count(*)::int AS n FROM prompt_hub.repos r WHERE ${count.cond}`, count.params);
    // $1 is the liker (REPO_COLUMNS), the filter's parameters follow it.
    const page = repoFilter(reader, q, 1, ownerTenantId);
    const params = [reader.liker, ...page.params, q.limit, q.offset];
    const dir = q.sort_direction === 'asc' ? 'ASC' : 'DESC';
    const rows: RepoRow[] = await this.db.query(
      `SELECT ${REPO_COLUMNS} ${REPO_FROM} WHERE ${page.cond} ORDER BY ${SORT_COLUMNS[q.sort_field]} ${dir}, r.repo_handle ${dir}, r.id LIMIT $${params.length - 1} OFFSET $${params.length}`,
      params,
    );
    return { rows, total: totalRows[0]?.n ?? 0 };
  }

  async updateRepo(repoId: string, patch: { description?: string | null; readme?: string | null; tags?: string[]; is_public?: boolean; is_archived?: boolean }): Promise<void> {
    const sets: string[] = ['updated_at = now()'];
    const params: unknown[] = [repoId];
    for (const [col, value] of Object.entries(patch)) {
      if (value === undefined) continue;
      params.push(value);
      sets.push(`${col} = $${params.length}`);
    }
    await this.db.query(`UPDATE prompt_hub.repos SET ${sets.join(', ')} WHERE id = $1`, params);
  }

  async deleteRepo(repoId: string): Promise<void> {
    await this.db.query(`DELETE FROM prompt_hub.repos WHERE id = $1`, [repoId]);
  }

  async touchRepo(repoId: string): Promise<void> {
    await this.db.query(`UPDATE prompt_hub.repos SET updated_at = now() WHERE id = $1`, [repoId]);
  }

  async countView(repoId: string): Promise<void> {
    await this.db.query(`UPDATE prompt_hub.repos SET num_views = num_views + 1 WHERE id = $1`, [repoId]);
  }

  async countDownload(repoId: string, commitId: string): Promise<void> {
    await this.db.query(`UPDATE prompt_hub.repos SET num_downloads = num_downloads + 1 WHERE id = $1`, [repoId]);
    await this.db.query(`UPDATE prompt_hub.commits SET num_downloads = num_downloads + 1 WHERE id = $1`, [commitId]);
  }

  async latestCommit(repoId: string): Promise<CommitRow | null> {
    const rows: CommitRow[] = await this.db.query(`SELECT ${COMMIT_COLUMNS} FROM prompt_hub.commits WHERE repo_id = $1 ORDER BY seq DESC LIMIT 1`, [repoId]);
    return rows[0] ?? null;
  }

  /** Commits whose hash starts with `prefix` (at most two: one is a match, two is ambiguous). */
  async commitsByHashPrefix(repoId: string, prefix: string): Promise<CommitRow[]> {
    return this.db.query(`SELECT ${COMMIT_COLUMNS} FROM prompt_hub.commits WHERE repo_id = $1 AND commit_hash LIKE $2 ORDER BY seq LIMIT 2`, [repoId, `${prefix}%`]);
  }

  async commitById(repoId: string, id: string): Promise<CommitRow | null> {
    const rows: CommitRow[] = await this.db.query(`SELECT ${COMMIT_COLUMNS} FROM prompt_hub.commits WHERE repo_id = $1 AND id = $2`, [repoId, id]);
    return rows[0] ?? null;
  }

  async insertCommit(tenantId: string, c: Omit<CommitRow, 'num_downloads' | 'num_views' | 'created_at'>): Promise<CommitRow> {
    const rows: CommitRow[] = await this.db.query(
      `INSERT INTO prompt_hub.commits (id, repo_id, tenant_id, commit_hash, parent_id, parent_commit_hash, manifest, description, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now()) RETURNING ${COMMIT_COLUMNS}`,
      [c.id, c.repo_id, tenantId, c.commit_hash, c.parent_id, c.parent_commit_hash, c.manifest, c.description],
    );
    return rows[0]!;
  }

  async listCommits(repoId: string, limit: number, offset: number): Promise<{ rows: CommitRow[]; total: number }> {
    const rows: CommitRow[] = await this.db.query(`SELECT ${COMMIT_COLUMNS} FROM prompt_hub.commits WHERE repo_id = $1 ORDER BY seq DESC LIMIT $2 OFFSET $3`, [repoId, limit, offset]);
    const total: { n: number }[] = await this.db.query(`SELECT count(*)::int AS n FROM prompt_hub.commits WHERE repo_id = $1`, [repoId]);
    return { rows, total: total[0]?.n ?? 0 };
  }

  private static readonly TAG_SELECT = `SELECT t.id, t.repo_id, t.tag_name, t.commit_id, c.commit_hash, t.created_at, t.updated_at
    FROM prompt_hub.commit_tags t JOIN prompt_hub.commits c ON c.id = t.commit_id`;

  async tag(repoId: string, tagName: string): Promise<TagRow | null> {
    const rows: TagRow[] = await this.db.query(`${PromptHubRepository.TAG_SELECT} WHERE t.repo_id = $1 AND t.tag_name = $2`, [repoId, tagName]);
    return rows[0] ?? null;
  }

  async listTags(repoId: string): Promise<TagRow[]> {
    return this.db.query(`${PromptHubRepository.TAG_SELECT} WHERE t.repo_id = $1 ORDER BY t.tag_name`, [repoId]);
  }

  /** False when the repo already has a tag of that name. */
  async insertTag(repoId: string, tagName: string, commitId: string): Promise<boolean> {
    const rows: unknown[] = await this.db.query(
      `INSERT INTO prompt_hub.commit_tags (id, repo_id, tag_name, commit_id, created_at, updated_at) VALUES ($1, $2, $3, $4, now(), now())
       ON CONFLICT (repo_id, tag_name) DO NOTHING RETURNING id`,
      [randomUUID(), repoId, tagName, commitId],
    );
    return rows.length > 0;
  }

  async moveTag(repoId: string, tagName: string, commitId: string): Promise<boolean> {
    const [, n]: [unknown, number] = await this.db.query(`UPDATE prompt_hub.commit_tags SET commit_id = $3, updated_at = now() WHERE repo_id = $1 AND tag_name = $2`, [repoId, tagName, commitId]);
    return n > 0;
  }

  async deleteTag(repoId: string, tagName: string): Promise<boolean> {
    const [, n]: [unknown, number] = await this.db.query(`DELETE FROM prompt_hub.commit_tags WHERE repo_id = $1 AND tag_name = $2`, [repoId, tagName]);
    return n > 0;
  }

  /** Sets the reader's like and returns the repo's like count. */
  async setLike(repoId: string, liker: string, like: boolean): Promise<number> {
    const changed: unknown[] = like
      ? await this.db.query(`INSERT INTO prompt_hub.likes (repo_id, liker, created_at) VALUES ($1, $2, now()) ON CONFLICT DO NOTHING RETURNING repo_id`, [repoId, liker])
      : ((await this.db.query(`DELETE FROM prompt_hub.likes WHERE repo_id = $1 AND liker = $2 RETURNING repo_id`, [repoId, liker])) as [unknown[], number])[0];
    if (changed.length > 0) await this.db.query(`UPDATE prompt_hub.repos SET num_likes = num_likes + $2 WHERE id = $1`, [repoId, like ? 1 : -1]);
    const rows: { num_likes: number }[] = await this.db.query(`SELECT num_likes FROM prompt_hub.repos WHERE id = $1`, [repoId]);
    return rows[0]?.num_likes ?? 0;
  }
}
