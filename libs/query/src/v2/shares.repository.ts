import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';

export interface TenantScope {
  tenant_id: string;
}

/** What a public token shares: a run with its subtree (of one trace), or one thread of a project. */
export type Share =
  | { token: string; tenant_id: string; session_id: string; kind: 'run'; run_id: string; trace_id: string }
  | { token: string; tenant_id: string; session_id: string; kind: 'thread'; thread_id: string };

interface ShareRow {
  token: string;
  tenant_id: string;
  session_id: string;
  run_id: string | null;
  trace_id: string | null;
  thread_id: string | null;
}

const toShare = (r: ShareRow): Share =>
  r.thread_id !== null
    ? { token: r.token, tenant_id: r.tenant_id, session_id: r.session_id, kind: 'thread', thread_id: r.thread_id }
    : { token: r.token, tenant_id: r.tenant_id, session_id: r.session_id, kind: 'run', run_id: String(r.run_id), trace_id: String(r.trace_id) };

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The only SQL of the share tokens ("query"."shares"); every write and read by id is bound to a tenant. */
export class SharesRepository {
  constructor(private readonly ds: DataSource) {}

  /** The share a public token names (the one read not bound to a tenant: the token is the credential). */
  async byToken(token: string): Promise<Share | null> {
    if (!UUID_RE.test(token)) return null;
    const rows = (await this.ds.query(`SELECT token, tenant_id, session_id, run_id, trace_id, thread_id FROM "query"."shares" WHERE token = $1`, [token])) as ShareRow[];
    return rows[0] ? toShare(rows[0]) : null;
  }

  async ofRun(scope: TenantScope, runId: string): Promise<Share | null> {
    const rows = (await this.ds.query(
      `SELECT token, tenant_id, session_id, run_id, trace_id, thread_id FROM "query"."shares" WHERE tenant_id = $1 AND run_id = $2`,
      [scope.tenant_id, runId],
    )) as ShareRow[];
    return rows[0] ? toShare(rows[0]) : null;
  }

  /** The tokens of these runs (a v2 SHARE_URL select). */
  async tokensOfRuns(scope: TenantScope, runIds: string[]): Promise<Map<string, string>> {
    if (runIds.length === 0) return new Map();
    const rows = (await this.ds.query(`SELECT run_id, token FROM "query"."shares" WHERE tenant_id = $1 AND run_id = ANY($2::uuid[])`, [scope.tenant_id, runIds])) as {
      run_id: string;
      token: string;
    }[];
    return new Map(rows.map((r) => [r.run_id, r.token]));
  }

  /**
   * Shares a run (once: sharing it again answers the existing token). A proposed token already taken (by any
   * tenant) is not used: a fresh one is, so a token never names two things.
   */
  async shareRun(scope: TenantScope, run: { session_id: string; run_id: string; trace_id: string }, proposed?: string): Promise<Share> {
    for (const token of [proposed ?? randomUUID(), randomUUID()]) {
      const rows = (await this.ds.query(
        `INSERT INTO "query"."shares" (token, tenant_id, session_id, run_id, trace_id) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT DO NOTHING RETURNING token, tenant_id, session_id, run_id, trace_id, thread_id`,
        [token, scope.tenant_id, run.session_id, run.run_id, run.trace_id],
      )) as ShareRow[];
      if (rows[0]) return toShare(rows[0]);
      const existing = await this.ofRun(scope, run.run_id);
      if (existing) return existing;
    }
    throw new Error('could not mint a share token');
  }

  async unshareRun(scope: TenantScope, runId: string): Promise<void> {
    await this.ds.query(`DELETE FROM "query"."shares" WHERE tenant_id = $1 AND run_id = $2`, [scope.tenant_id, runId]);
  }

  /** Removes every share of a trace in a project (v2 runs.share.delete names the trace). */
  async unshareTrace(scope: TenantScope, sessionId: string, traceId: string): Promise<void> {
    await this.ds.query(`DELETE FROM "query"."shares" WHERE tenant_id = $1 AND session_id = $2 AND trace_id = $3`, [scope.tenant_id, sessionId, traceId]);
  }

  async ofThread(scope: TenantScope, sessionId: string, threadId: string): Promise<Share | null> {
    const rows = (await this.ds.query(
      `SELECT token, tenant_id, session_id, run_id, trace_id, thread_id FROM "query"."shares" WHERE tenant_id = $1 AND session_id = $2 AND thread_id = $3`,
      [scope.tenant_id, sessionId, threadId],
    )) as ShareRow[];
    return rows[0] ? toShare(rows[0]) : null;
  }

  async shareThread(scope: TenantScope, sessionId: string, threadId: string): Promise<Share> {
    const rows = (await this.ds.query(
      `INSERT INTO "query"."shares" (token, tenant_id, session_id, thread_id) VALUES ($1, $2, $3, $4)
       ON CONFLICT DO NOTHING RETURNING token, tenant_id, session_id, run_id, trace_id, thread_id`,
      [randomUUID(), scope.tenant_id, sessionId, threadId],
    )) as ShareRow[];
    if (rows[0]) return toShare(rows[0]);
    const existing = await this.ofThread(scope, sessionId, threadId);
    if (!existing) throw new Error('could not mint a share token');
    return existing;
  }

  async unshareThread(scope: TenantScope, sessionId: string, threadId: string): Promise<void> {
    await this.ds.query(`DELETE FROM "query"."shares" WHERE tenant_id = $1 AND session_id = $2 AND thread_id = $3`, [scope.tenant_id, sessionId, threadId]);
  }
}
