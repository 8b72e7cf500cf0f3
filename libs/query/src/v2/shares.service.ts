import { Injectable } from '@nestjs/common';
import { runQuerySchema, toV2Run, v2RecordFields, type Identity, type RunQuery, type RunRecord, type RunShare } from '@th/contracts';
import { notFound } from '@th/platform';
import { RunsService } from '../runs/runs.service';
import { SharesRepository, type Share } from './shares.repository';
import { threadFilter } from './v2-threads.service';
import { V2RunsService, type V2Run } from './v2-runs.service';

/** What a public read sees of the runs: everything but where they live in the owner's workspace. */
const PUBLIC_HIDDEN: readonly (keyof RunRecord)[] = ['tenant_id', 'app_path'];
const UNKNOWN_TOKEN = 'Shared run';

/**
 * Public sharing: a run (with its subtree: v1 share_run; v2 shares the trace's root) or a thread, by an
 * unguessable token read without a key. A token reads only what it shares; unsharing revokes it at once
 * (every public read looks the token up); an unknown, revoked or malformed token is a 404 like any other.
 */
@Injectable()
export class SharesService {
  constructor(
    private readonly runs: RunsService,
    private readonly v2: V2RunsService,
    private readonly shares: SharesRepository,
  ) {}

  /** PUT /runs/{run_id}/share: the classic SDKs propose a token; an existing share keeps its own. */
  async shareRun(identity: Identity, runId: string, proposed: string | undefined): Promise<RunShare> {
    const run = await this.runs.get(identity, runId);
    const share = await this.shares.shareRun(identity, { session_id: String(run.session_id), run_id: runId, trace_id: String(run.trace_id) }, proposed);
    return { run_id: runId, share_token: share.token };
  }

  async runShare(identity: Identity, runId: string): Promise<RunShare | null> {
    const share = await this.shares.ofRun(identity, runId);
    return share ? { run_id: runId, share_token: share.token } : null;
  }

  unshareRun(identity: Identity, runId: string): Promise<void> {
    return this.shares.unshareRun(identity, runId);
  }

  /** POST /api/v2/runs/{run_id}/share: shares the run's trace (its root), once. */
  async shareTrace(identity: Identity, runId: string, sessionId: string, traceId: string): Promise<{ share_token: string }> {
    const found = await this.runs.query(identity, runQuerySchema.parse({ id: [runId], session: [sessionId], trace: traceId, select: ['id'], limit: 1 }));
    if (found.runs.length === 0) throw notFound(`Run ${runId}`);
    const share = await this.shares.shareRun(identity, { session_id: sessionId, run_id: traceId, trace_id: traceId });
    return { share_token: share.token };
  }

  unshareTrace(identity: Identity, sessionId: string, traceId: string): Promise<void> {
    return this.shares.unshareTrace(identity, sessionId, traceId);
  }

  async shareThread(identity: Identity, threadId: string, projectId: string): Promise<{ share_token: string }> {
    const found = await this.runs.query(identity, runQuerySchema.parse({ session: [projectId], is_root: true, filter: threadFilter(threadId), select: ['id'], limit: 1 }));
    if (found.runs.length === 0) throw notFound(`Thread ${threadId}`);
    return { share_token: (await this.shares.shareThread(identity, projectId, threadId)).token };
  }

  async threadShare(identity: Identity, threadId: string, projectId: string): Promise<{ share_token: string }> {
    const share = await this.shares.ofThread(identity, projectId, threadId);
    if (!share) throw notFound(`Share of thread ${threadId}`);
    return { share_token: share.token };
  }

  unshareThread(identity: Identity, threadId: string, projectId: string): Promise<void> {
    return this.shares.unshareThread(identity, projectId, threadId);
  }

  // ---- public reads (no key: the token is the credential) ----------------------------------------

  /** GET /public/{token}/run: the shared run itself. */
  async publicRun(token: string): Promise<Partial<RunRecord>> {
    const share = await this.resolve(token);
    if (share.kind !== 'run') throw notFound(UNKNOWN_TOKEN);
    return this.publicOne(share, share.run_id, undefined);
  }

  /** GET /public/{token}/run/{run_id}: a run the token shares. */
  publicRunById(token: string, runId: string): Promise<Partial<RunRecord>> {
    return this.resolve(token).then((share) => this.publicOne(share, runId, undefined));
  }

  /** POST /public/{token}/runs/query: a page of the shared runs (classic shape). */
  async publicQuery(token: string, q: { id?: string[] | null; cursor?: string | null; limit: number }): Promise<{ runs: Partial<RunRecord>[]; cursors: { next: string | null } }> {
    const share = await this.resolve(token);
    const res = await this.runs.query(this.ownerOf(share), runQuerySchema.parse({ ...this.scope(share), id: q.id ?? undefined, order: 'asc', limit: q.limit, cursor: q.cursor ?? undefined }));
    return { runs: res.runs.filter((r) => this.shared(share, r)).map(hide), cursors: { next: res.cursors.next } };
  }

  /** GET /api/v2/public/{token}/run/{run_id}. */
  async publicV2Run(token: string, runId: string, selects: string[] | undefined): Promise<V2Run> {
    const share = await this.resolve(token);
    return toV2Run(await this.publicOne(share, runId, v2RecordFields(selects)), selects);
  }

  /** POST /api/v2/public/{token}/runs/query: every shared run (bounded), oldest first. */
  async publicV2Query(token: string, selects: string[] | undefined): Promise<{ items: V2Run[] }> {
    const share = await this.resolve(token);
    const runs = await this.v2.all(this.ownerOf(share), { ...this.scope(share), select: [...new Set([...v2RecordFields(selects), 'parent_run_ids' as const])] });
    return { items: runs.filter((r) => this.shared(share, r)).map((r) => toV2Run(hide(r), selects)) };
  }

  private async resolve(token: string): Promise<Share> {
    const share = await this.shares.byToken(token);
    if (!share) throw notFound(UNKNOWN_TOKEN);
    return share;
  }

  private async publicOne(share: Share, runId: string, select: (keyof RunRecord)[] | undefined): Promise<Partial<RunRecord>> {
    const res = await this.runs.query(
      this.ownerOf(share),
      runQuerySchema.parse({ ...this.scope(share), id: [runId], select: select ? [...new Set([...select, 'parent_run_ids' as const])] : undefined, limit: 1 }),
    );
    const run = res.runs[0];
    if (!run || !this.shared(share, run)) throw notFound(UNKNOWN_TOKEN);
    return hide(run);
  }

  /** The runs a share can reach, as query conditions: the shared trace, or the traces of the shared thread. */
  private scope(share: Share): Partial<RunQuery> {
    return share.kind === 'run' ? { session: [share.session_id], trace: share.trace_id } : { session: [share.session_id], trace_filter: threadFilter(share.thread_id) };
  }

  /** Within a shared trace, a run shared by v1 share_run reaches its own subtree only. */
  private shared(share: Share, run: Partial<RunRecord>): boolean {
    if (share.kind !== 'run' || share.run_id === share.trace_id) return true;
    return run.id === share.run_id || (run.parent_run_ids ?? []).includes(share.run_id);
  }

  /** The reads of a share run as its tenant, with no permissions beyond reading what it names. */
  private ownerOf(share: Share): Identity {
    return { organization_id: '', tenant_id: share.tenant_id, user_id: null, credential_id: null, credential_type: 'internal', plan: 'free', permissions: [] };
  }
}

function hide(run: Partial<RunRecord>): Partial<RunRecord> {
  const out = { ...run };
  for (const k of PUBLIC_HIDDEN) delete out[k];
  return out;
}
