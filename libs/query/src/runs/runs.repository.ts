import { Injectable } from '@nestjs/common';
import { byIdCondition, byIdsCondition, ClickHouse, RUNS_BY_ID, type QueryParams } from '@th/clickhouse';
import { RUN_FIELDS, type RunFieldDef, type RunRecord, type TenantScope } from '@th/contracts';


/**
 * Ids named in one statement: chDB inlines the parameters into the SQL, and a page of 10,000 ids (a trace's
 * tree) would pass the engine's max_query_size; larger pages are read in statements of this many.
 */
const IDS_PER_STATEMENT = 1_000;
const chunks = <T>(items: readonly T[], size: number): T[][] => {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
};
/** A WHERE fragment with its typed parameters; fragments are ANDed. */
export interface Condition {
  sql: string;
  params: QueryParams;
}

const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/** Stored column (or expression) behind each run record field. */
const FIELD_SQL = Object.fromEntries(
  Object.entries(RUN_FIELDS).map(([field, def]: [string, RunFieldDef]) => [field, def.select ?? field]),
) as Record<keyof RunRecord, string>;

export type StoredRun = Record<string, unknown>;

/** The newest version among a run's locator rows (or rows), unless that newest write deleted it there. */
function newestLive<T extends { version: number | string; is_deleted: number }>(rows: T[]): T | null {
  let best: T | null = null;
  for (const r of rows) {
    const v = Number(r.version);
    if (!best || v > Number(best.version) || (v === Number(best.version) && best.is_deleted === 1 && r.is_deleted === 0)) best = r;
  }
  return best && best.is_deleted === 0 ? best : null;
}

/** ClickHouse reads of runs. Every query is bound to a tenant and reads merged rows only (FINAL). */
@Injectable()
export class RunsRepository {
  constructor(private readonly ch: ClickHouse) {}

  static columnsFor(fields: readonly (keyof RunRecord)[]): string {
    const cols = new Set<string>(['id', 'session_id', 'start_time', 'trace_id']);
    for (const f of fields) cols.add(FIELD_SQL[f]);
    return [...cols].join(', ');
  }

  /**
   * Where each of these runs lives now: its newest locator row, unless that write deleted it there.
   * One read by primary key; ids without a live row are left out.
   */
  async locate(scope: TenantScope, ids: readonly string[]): Promise<Map<string, { session_id: string; start_time: string; version: number }>> {
    const out = new Map<string, { session_id: string; start_time: string; version: number }>();
    if (ids.length === 0) return out;
    const byIds = byIdsCondition('ids', [...new Set(ids)]);
    const rows = await this.ch.query<{ id: string; session_id: string; start_time: string; version: number | string; is_deleted: number }>(
      `SELECT id, session_id, toString(start_time) AS start_time, version, is_deleted FROM ${RUNS_BY_ID} WHERE tenant_id = {tenant:UUID} AND ${byIds.sql}`,
      { tenant: scope.tenant_id, ...byIds.params },
    );
    const byId = new Map<string, typeof rows>();
    for (const r of rows) {
      const list = byId.get(r.id);
      if (list) list.push(r);
      else byId.set(r.id, [r]);
    }
    for (const [id, list] of byId) {
      const live = newestLive(list);
      if (live) out.set(id, { session_id: live.session_id, start_time: live.start_time, version: Number(live.version) });
    }
    return out;
  }

  /**
   * A page of located runs (see locate) that meet the conditions, in one read bounded by their sorting
   * keys: their projects and time span, their ids and current versions.
   */
  async listLocated(
    scope: TenantScope,
    located: Map<string, { session_id: string; start_time: string; version: number }>,
    conditions: Condition[],
    fields: readonly (keyof RunRecord)[],
    order: 'asc' | 'desc',
    limit: number,
  ): Promise<StoredRun[]> {
    if (located.size === 0) return [];
    const dir = order === 'asc' ? 'ASC' : 'DESC';
    const places = [...located.values()];
    const times = places.map((p) => p.start_time).sort();
    const { where, params } = this.where(scope, [
      ...conditions,
      {
        sql: `session_id IN {loc_sessions:Array(UUID)} AND start_time BETWEEN {loc_t0:DateTime64(6, 'UTC')} AND {loc_t1:DateTime64(6, 'UTC')}
              AND id IN {loc_ids:Array(UUID)} AND version IN {loc_versions:Array(UInt64)}`,
        params: {
          loc_sessions: [...new Set(places.map((p) => p.session_id))],
          loc_t0: times[0],
          loc_t1: times[times.length - 1],
          loc_ids: [...located.keys()],
          loc_versions: places.map((p) => p.version),
        },
      },
    ]);
    // A few more than the page: another run's old version could share a current version (two writers, one microsecond).
    const rows = await this.ch.query<StoredRun>(
      `SELECT ${RunsRepository.columnsFor(fields)}, version AS _version FROM runs WHERE ${where} AND is_deleted = 0
       ORDER BY start_time ${dir}, id ${dir} LIMIT {loc_limit:UInt32}`,
      { ...params, loc_limit: limit + 16 },
    );
    const current = rows.filter((r) => located.get(String(r.id))?.version === Number(r._version));
    for (const r of current) delete r._version;
    return current.slice(0, limit);
  }

  /**
   * One read, by primary key, no FINAL: the locator names the sorting keys the run has rows under (a
   * subquery the engine runs first and uses as a set in the key analysis), the run's rows under those
   * keys are read, and the newest version is the run (a moved run's old key holds a delete marker of
   * the same version as its row under the new key: the live row wins the tie, as in locate()).
   */
  async getById(scope: TenantScope, id: string, fields: readonly (keyof RunRecord)[]): Promise<StoredRun | null> {
    const byId = byIdCondition('id', id);
    const rows = await this.ch.query<StoredRun & { version: number | string; is_deleted: number }>(
      `SELECT ${RunsRepository.columnsFor(fields)}, version, is_deleted FROM runs
       WHERE tenant_id = {tenant:UUID} AND id = {id:UUID}
         AND (session_id, start_time) IN (SELECT session_id, start_time FROM ${RUNS_BY_ID} WHERE tenant_id = {tenant:UUID} AND ${byId.sql})`,
      { tenant: scope.tenant_id, ...byId.params },
    );
    const best: StoredRun | null = newestLive(rows);
    if (!best) return null;
    delete best.version;
    delete best.is_deleted;
    return best;
  }

  /**
   * A page of runs without FINAL over the whole range (which costs a full merge of the project):
   * candidates come from the sorting key in order, then each is checked against the locator to be
   * the newest version of its run; stale versions are dropped and more candidates read if needed.
   */
  async list(
    scope: TenantScope,
    conditions: Condition[],
    fields: readonly (keyof RunRecord)[],
    order: 'asc' | 'desc',
    limit: number,
  ): Promise<StoredRun[]> {
    const dir = order === 'asc' ? 'ASC' : 'DESC';
    const valid: { id: string; version: number; t: string; s: string }[] = [];
    const validIds = new Set<string>();
    let after: { t: string; id: string } | null = null;
    let want = limit + 16;
    for (let round = 0; round < 6 && valid.length < limit; round++) {
      const page = after
        ? [...conditions, { sql: `(start_time, id) ${order === 'asc' ? '>' : '<'} ({after_t:DateTime64(6, 'UTC')}, {after_id:UUID})`, params: { after_t: after.t, after_id: after.id } }]
        : conditions;
      const { where, params } = this.where(scope, page);
      // Exactly the sorting key's order (the project's key prefix is fixed by the WHERE), so the engine
      // reads the newest granules of each part and stops at the limit; ordering or limiting by version
      // as well made it read and sort the whole project. A run's versions share its key, so they are
      // adjacent here and its newest version in the window is kept.
      const window = await this.ch.query<{ id: string; version: number | string; t: string; s: string }>(
        `SELECT id, version, toString(start_time) AS t, session_id AS s FROM runs WHERE ${where} AND is_deleted = 0
         ORDER BY start_time ${dir}, id ${dir} LIMIT {want:UInt32}`,
        { ...params, want },
      );
      if (window.length === 0) break;
      const candidates: typeof window = [];
      for (const r of window) {
        const prev = candidates[candidates.length - 1];
        if (prev && prev.id === r.id) {
          if (Number(r.version) > Number(prev.version)) Object.assign(prev, { version: r.version, s: r.s });
        } else candidates.push({ ...r });
      }
      if (window.length === want) {
        // The window may end inside the last run's versions: its newest matching version, by primary key.
        const tail = candidates[candidates.length - 1];
        const [top] = await this.ch.query<{ v: number | string; s: string }>(
          `SELECT max(version) AS v, argMax(session_id, version) AS s FROM runs WHERE ${where} AND is_deleted = 0
             AND start_time = {tail_t:DateTime64(6, 'UTC')} AND id = {tail_id:UUID}`,
          { ...params, tail_t: tail.t, tail_id: tail.id },
        );
        if (top && Number(top.v) > Number(tail.version)) Object.assign(tail, { version: top.v, s: top.s });
      }
      const newest = new Map<string, number>();
      for (const chunk of chunks(candidates, IDS_PER_STATEMENT)) {
        const byIds = byIdsCondition('ids', chunk.map((c) => c.id));
        const found = await this.ch.query<{ id: string; v: number | string }>(
          `SELECT id, max(version) AS v FROM ${RUNS_BY_ID} WHERE tenant_id = {tenant:UUID} AND ${byIds.sql} GROUP BY id`,
          { tenant: scope.tenant_id, ...byIds.params },
        );
        for (const r of found) newest.set(r.id, Number(r.v));
      }
      for (const c of candidates) {
        if (Number(c.version) >= (newest.get(c.id) ?? 0) && !validIds.has(c.id)) {
          validIds.add(c.id);
          valid.push({ id: c.id, version: Number(c.version), t: c.t, s: c.s });
        }
        if (valid.length >= limit) break;
      }
      if (window.length < want) break;
      const last = candidates[candidates.length - 1];
      after = { t: last.t, id: last.id };
      want *= 2;
    }
    if (valid.length === 0) return [];
    // Each chunk's own projects and time range bound its read to a few granules of the sorting key.
    const rows: StoredRun[] = [];
    for (const chunk of chunks(valid, IDS_PER_STATEMENT)) {
      const times = chunk.map((v) => v.t).sort();
      rows.push(
        ...(await this.ch.query<StoredRun>(
          `SELECT ${RunsRepository.columnsFor(fields)}, version AS _version FROM runs
           WHERE tenant_id = {tenant:UUID} AND session_id IN {sessions:Array(UUID)} AND start_time BETWEEN {t0:DateTime64(6, 'UTC')} AND {t1:DateTime64(6, 'UTC')}
             AND id IN {ids:Array(UUID)} AND version IN {versions:Array(UInt64)} AND is_deleted = 0`,
          {
            tenant: scope.tenant_id,
            sessions: [...new Set(chunk.map((v) => v.s))],
            t0: times[0],
            t1: times[times.length - 1],
            ids: chunk.map((v) => v.id),
            versions: chunk.map((v) => v.version),
          },
        )),
      );
    }
    const byKey = new Map(rows.map((r) => [`${String(r.id)}|${Number(r._version)}`, r]));
    return valid.flatMap((v) => {
      const r = byKey.get(`${v.id}|${v.version}`);
      if (!r) return [];
      delete r._version;
      return [r];
    });
  }

  async stats(scope: TenantScope, conditions: Condition[]): Promise<Record<string, unknown>> {
    const { where, params } = this.where(scope, conditions);
    const rows = await this.ch.query<Record<string, unknown>>(
      `SELECT
         count() AS run_count,
         countIf(error IS NOT NULL) AS error_count,
         quantilesIf(0.5, 0.99)(dateDiff('microsecond', start_time, end_time) / 1e6, end_time IS NOT NULL) AS latency,
         quantilesIf(0.5, 0.99)(dateDiff('microsecond', start_time, first_token_time) / 1e6, first_token_time IS NOT NULL) AS first_token,
         sum(total_tokens) AS s_total_tokens,
         sum(prompt_tokens) AS s_prompt_tokens,
         sum(completion_tokens) AS s_completion_tokens,
         quantileIf(0.5)(total_tokens, total_tokens > 0) AS median_tokens,
         sumOrNull(total_cost) AS s_total_cost,
         sumOrNull(prompt_cost) AS s_prompt_cost,
         sumOrNull(completion_cost) AS s_completion_cost,
         countIf(first_token_time IS NOT NULL) AS streaming_count,
         if(count() = 0, NULL, max(start_time)) AS last_run_start_time
       FROM runs FINAL WHERE ${where}`,
      params,
      // Versions of a run share its partition (start_time is in the key): FINAL need not merge across them.
      { do_not_merge_across_partitions_select_final: 1 },
    );
    return rows[0] ?? {};
  }

  async attachment(scope: TenantScope, runId: string, name: string): Promise<{ mime_type: string; data: string } | null> {
    const rows = await this.ch.query<{ mime_type: string; data: string }>(
      `SELECT mime_type, data FROM run_attachments FINAL WHERE tenant_id = {tenant:UUID} AND run_id = {id:UUID} AND name = {name:String}`,
      { tenant: scope.tenant_id, id: runId, name },
    );
    return rows[0] ?? null;
  }

  /** The WHERE clause of a runs read, for reads joined to the matched runs (feedback stats). */
  runsWhere(scope: TenantScope, conditions: Condition[]): { where: string; params: QueryParams } {
    return this.where(scope, conditions);
  }

  private where(scope: TenantScope, conditions: Condition[]): { where: string; params: QueryParams } {
    const parts = ['tenant_id = {tenant:UUID}', `session_id != '${NIL_UUID}'`];
    let params: QueryParams = { tenant: scope.tenant_id };
    for (const c of conditions) {
      parts.push(`(${c.sql})`);
      params = { ...params, ...c.params };
    }
    return { where: parts.join(' AND '), params };
  }
}
