import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { TOPICS, type RunControlEvent, type RunEvent, type TopicPayload } from '@th/contracts';
import { EventBus, type BusMessage, type Rejection } from '@th/bus';
import { ClickHouse } from '@th/clickhouse';
import { RunCache } from './run-cache';
import { computeRun, emptyRun, mergeEvent, type ComputedRun, type MergedRun } from './run-merge';
import { keyOf, locatorRowJson, runRowJson, STORED_RUN_COLUMNS, mergedFromRow, tombstoneRowJson, type StoredRunRow } from './run-row';
import { INGEST_OPTIONS, type IngestOptions } from './ingest.options';
import { analyzeLlmRun } from '@th/llm';
import { PriceMapRepository } from './price-map/price-map.repository';

type RunsMessage = BusMessage<TopicPayload<'runs'>>;

/** Process-wide monotonic version: microseconds since the epoch, never repeating. */
let lastVersion = 0;
export function nextVersion(): number {
  lastVersion = Math.max(lastVersion + 1, Date.now() * 1000);
  return lastVersion;
}

/**
 * The writer role of ingest: consumes run events in batches, merges every POST and PATCH of a run
 * with what is already stored, writes whole rows to ClickHouse, and only then lets the bus commit.
 */
@Injectable()
export class RunWriterService implements OnApplicationBootstrap {
  private readonly logger = new Logger('run-writer');
  private readonly cache: RunCache;
  private mergeLock: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly bus: EventBus,
    private readonly ch: ClickHouse,
    @Inject(INGEST_OPTIONS) private readonly options: IngestOptions,
    private readonly prices: PriceMapRepository,
  ) {
    this.cache = new RunCache(options.writerCacheEntries);
  }

  async onApplicationBootstrap(): Promise<void> {
    if (!this.options.writer) return;
    await this.bus.subscribe(
      TOPICS.runs,
      { groupId: 'ingest-writer', maxBatchSize: this.options.writerMaxBatch, concurrency: 4, onAssignmentChange: () => this.cache.clear() },
      (batch) => this.handle(batch),
    );
  }

  /**
   * Only the merge itself is serialized (each batch sees the state the previous one left in the
   * cache); lookups of unknown runs, row serialization and the ClickHouse inserts of consecutive
   * batches overlap. Versions only grow, so whichever insert lands last, the newest version wins.
   */
  async handle(batch: RunsMessage[]): Promise<{ rejected: Rejection<TopicPayload<'runs'>>[] }> {
    const rejected: Rejection<TopicPayload<'runs'>>[] = [];
    const byRun = new Map<string, { msg: RunsMessage; event: RunEvent }[]>();
    for (const msg of batch) {
      if (msg.value.kind !== 'run') {
        await this.deleteSession(msg.value);
        continue;
      }
      const key = RunCache.key(msg.value.tenant_id, msg.value.id);
      const list = byRun.get(key);
      if (list) list.push({ msg, event: msg.value });
      else byRun.set(key, [{ msg, event: msg.value }]);
    }
    const looked = await this.loadStates([...byRun.keys()].filter((k) => !this.cache.get(k)));
    const merged = await this.serialized(async () => this.merge(byRun, looked, rejected));
    const llm = await this.deriveLlm(merged);
    const runLines: string[] = [];
    const locatorLines: string[] = [];
    const attachmentLines: string[] = [];
    for (const m of merged) {
      try {
        const { line, key: rowKey } = runRowJson(m.run, m.run.version, m.receivedAt, m.computed, llm.get(m.run) ?? '');
        runLines.push(line);
        locatorLines.push(locatorRowJson(m.run.tenant_id, m.run.id, rowKey, m.computed, m.run.version));
        for (const old of m.oldKeys) {
          if (old === rowKey) continue;
          runLines.push(tombstoneRowJson(m.run.tenant_id, m.run.id, old, m.run.version));
          locatorLines.push(locatorRowJson(m.run.tenant_id, m.run.id, old, null, m.run.version));
        }
        attachmentLines.push(...m.attachmentLines);
      } catch (err) {
        for (const { msg } of m.events) rejected.push({ message: msg, reason: `serialize failed: ${(err as Error).message}` });
      }
    }
    if (attachmentLines.length > 0) await this.ch.insertJsonEachRow('run_attachments', Buffer.from(attachmentLines.join('\n')));
    // The locator first: a run row is never written without the locator row that finds it.
    if (locatorLines.length > 0) await this.ch.insertJsonEachRow('run_locator', Buffer.from(locatorLines.join('\n')));
    if (runLines.length > 0) await this.ch.insertJsonEachRow('runs', Buffer.from(runLines.join('\n')));
    return { rejected };
  }

  /**
   * LLM runs: tokens (supplied or estimated), costs (explicit or from the workspace's price map, then the
   * default table) and the normalized view, all derived from the merged run alone, so a redelivered or
   * reordered event yields the same row. Price maps are read only when the batch holds LLM runs.
   */
  private async deriveLlm(merged: { run: MergedRun; computed: ComputedRun }[]): Promise<Map<MergedRun, string>> {
    const out = new Map<MergedRun, string>();
    const llmRuns = merged.filter((m) => m.run.fields.run_type === 'llm');
    if (llmRuns.length === 0) return out;
    const prices = await this.prices.listForTenants([...new Set(llmRuns.map((m) => m.run.tenant_id))]);
    for (const { run, computed } of llmRuns) {
      const f = run.fields;
      try {
        const a = analyzeLlmRun({ inputs: f.inputs, outputs: f.outputs, extra: f.extra, start_time: computed.start_time }, prices.get(run.tenant_id) ?? []);
        computed.prompt_tokens = a.prompt_tokens;
        computed.completion_tokens = a.completion_tokens;
        computed.total_tokens = a.total_tokens;
        computed.prompt_cost = a.prompt_cost;
        computed.completion_cost = a.completion_cost;
        computed.total_cost = a.total_cost;
        out.set(run, JSON.stringify(a.view));
      } catch (err) {
        // The run is stored without the derived view rather than lost.
        this.logger.warn(`LLM view of run ${run.id} failed: ${(err as Error).message}`);
      }
    }
    return out;
  }

  private serialized<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.mergeLock.then(fn);
    this.mergeLock = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /** Folds the batch into the runs' current states (memory first: it is fresher than any lookup). */
  private merge(
    byRun: Map<string, { msg: RunsMessage; event: RunEvent }[]>,
    looked: Map<string, MergedRun>,
    rejected: Rejection<TopicPayload<'runs'>>[],
  ): { run: MergedRun; computed: ComputedRun; oldKeys: string[]; receivedAt: string; attachmentLines: string[]; events: { msg: RunsMessage }[] }[] {
    const out = [];
    for (const [key, list] of byRun) {
      const base = this.cache.get(key) ?? looked.get(key);
      const run: MergedRun = base ? cloneRun(base) : emptyRun(list[0].event.tenant_id, list[0].event.id);
      let changed = !base;
      const version = nextVersion();
      const attachmentLines: string[] = [];
      try {
        for (const { event } of list) {
          if (mergeEvent(run, event)) changed = true;
          for (const a of event.attachments ?? []) {
            run.attachments[a.name] = { mime_type: a.mime_type, size: Buffer.byteLength(a.data_base64, 'base64') };
            attachmentLines.push(
              JSON.stringify({ tenant_id: run.tenant_id, run_id: run.id, name: a.name, mime_type: a.mime_type, data: a.data_base64, version }),
            );
            changed = true;
          }
        }
        if (!changed) continue; // a pure redelivery: the stored row is already this run
        const oldKeys = run.storedKeys;
        const computed = computeRun(run, list[0].event.received_at);
        run.storedKeys = [keyOf({ session_id: computed.session_id, start_time: computed.start_time })];
        run.version = version;
        this.cache.set(key, run);
        out.push({ run, computed, oldKeys, receivedAt: list[0].event.received_at, attachmentLines, events: list });
      } catch (err) {
        // A run that cannot be merged is poison: dead-letter its events, keep the rest moving.
        for (const { msg } of list) rejected.push({ message: msg, reason: `merge failed: ${(err as Error).message}` });
      }
    }
    return out;
  }

  /** Current state of each run: from memory when this writer wrote it last, else from ClickHouse. */
  private async loadStates(keys: string[]): Promise<Map<string, MergedRun>> {
    const out = new Map<string, MergedRun>();
    const missing = new Map<string, string[]>(); // tenant -> ids
    for (const key of keys) {
      const hit = this.cache.get(key);
      if (hit) out.set(key, hit);
      else {
        const [tenant, id] = key.split(':');
        const list = missing.get(tenant);
        if (list) list.push(id);
        else missing.set(tenant, [id]);
      }
    }
    for (const [tenant, ids] of missing) {
      for (let i = 0; i < ids.length; i += 5000) {
        const chunk = ids.slice(i, i + 5000);
        // Phase 1, by primary key: under which sorting keys each run lives. New runs stop here.
        const located = await this.ch.query<{ id: string; session_id: string; start_time: string; is_deleted: number }>(
          'SELECT id, session_id, start_time, is_deleted FROM run_locator FINAL WHERE tenant_id = {tenant:UUID} AND id IN {ids:Array(UUID)}',
          { tenant, ids: chunk },
        );
        const liveKeys = new Map<string, string[]>();
        for (const l of located) {
          if (l.is_deleted === 1) continue;
          const list = liveKeys.get(l.id) ?? [];
          list.push(keyOf({ session_id: l.session_id, start_time: l.start_time }));
          liveKeys.set(l.id, list);
        }
        if (liveKeys.size === 0) continue;
        // Phase 2: the stored versions at those keys; the newest is the state, the other keys get tombstones.
        const sessions = [...new Set(located.map((l) => l.session_id))];
        const rows = await this.ch.query<StoredRunRow>(
          `SELECT ${STORED_RUN_COLUMNS} FROM runs WHERE tenant_id = {tenant:UUID} AND session_id IN {sessions:Array(UUID)} AND id IN {ids:Array(UUID)} AND is_deleted = 0`,
          { tenant, sessions, ids: [...liveKeys.keys()] },
        );
        for (const row of rows) {
          const keys = liveKeys.get(row.id);
          const run = mergedFromRow(row);
          if (!keys || !keys.includes(run.storedKeys[0])) continue;
          const key = RunCache.key(row.tenant_id, row.id);
          const prev = out.get(key);
          if (!prev || run.version > prev.version) {
            run.storedKeys = keys;
            out.set(key, run);
          }
        }
      }
    }
    return out;
  }

  private async deleteSession(c: RunControlEvent): Promise<void> {
    await this.ch.command(
      'DELETE FROM runs WHERE tenant_id = {tenant:UUID} AND session_id = {session:UUID}',
      { tenant: c.tenant_id, session: c.session_id },
      { lightweight_deletes_sync: 2 },
    );
    await this.ch.command(
      'DELETE FROM run_locator WHERE tenant_id = {tenant:UUID} AND session_id = {session:UUID}',
      { tenant: c.tenant_id, session: c.session_id },
      { lightweight_deletes_sync: 2 },
    );
    this.cache.deleteWhere((r) => r.tenant_id === c.tenant_id && r.fields.session_id === c.session_id);
  }
}

function cloneRun(run: MergedRun): MergedRun {
  return {
    tenant_id: run.tenant_id,
    id: run.id,
    fields: { ...run.fields },
    priority: { ...run.priority },
    attachments: { ...run.attachments },
    storedKeys: [...run.storedKeys],
    version: run.version,
    text: run.text ? { ...run.text } : undefined,
  };
}
