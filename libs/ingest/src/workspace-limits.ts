import type { Identity, RunCreate, RunEvent } from '@th/contracts';
import type { OutgoingMessage } from '@th/bus';
import { RUNS_BY_ID, type ClickHouse } from '@th/clickhouse';
import { DomainError, ErrorCode } from '@th/platform';

/** Stamps each run event with the workspace's retention (from the gateway's identity); the writer turns it into expires_at. */
export function applyRetention(identity: Identity, events: OutgoingMessage<RunEvent>[]): void {
  const retention = identity.workspace_settings?.retention_days;
  if (!retention) return;
  for (const e of events) e.value.fields.retention_days = retention;
}

const REFRESH_MS = 10_000;

/**
 * The workspace's monthly_traces usage limit: new traces (root runs) of this calendar month (UTC),
 * counted in ClickHouse and refreshed every few seconds, plus what this process accepted since.
 * Past the limit the whole request is refused with 429 and nothing is produced.
 */
export class UsageGate {
  private readonly used = new Map<string, { month: string; count: number; at: number }>();

  constructor(private readonly ch: ClickHouse) {}

  async check(identity: Identity, posts: RunCreate[]): Promise<void> {
    const limit = identity.workspace_settings?.usage_limits?.monthly_traces;
    if (limit === undefined) return;
    const roots = new Set(posts.filter((p) => p.id && !p.parent_run_id && (p.trace_id ?? p.id) === p.id).map((p) => p.id));
    if (roots.size === 0) return;
    const month = new Date().toISOString().slice(0, 7);
    const tenant = identity.tenant_id;
    let entry = this.used.get(tenant);
    if (!entry || entry.month !== month || Date.now() - entry.at > REFRESH_MS) {
      const rows = await this.ch.query<{ n: string }>(
        `SELECT uniqExact(id) AS n FROM ${RUNS_BY_ID} FINAL
         WHERE tenant_id = {tenant:UUID} AND start_time >= toStartOfMonth(now64(6, 'UTC')) AND id = trace_id AND is_deleted = 0`,
        { tenant },
      );
      entry = { month, count: Number(rows[0]?.n ?? 0), at: Date.now() };
      this.used.set(tenant, entry);
    }
    if (entry.count + roots.size > limit) {
      throw new DomainError(
        ErrorCode.RateLimited,
        `Usage limit exceeded: this workspace's monthly_traces limit is ${limit} and ${entry.count} traces were ingested this month`,
      );
    }
    entry.count += roots.size;
  }
}
