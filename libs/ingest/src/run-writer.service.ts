import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import type { ModelPriceMap, RunControlEvent, RunEvent, TopicPayload } from '@th/contracts';
import type { BatchHooks, BusMessage, Rejection, SubscribeOptions } from '@th/bus';
import { byIdsCondition, ClickHouse, RUNS_BY_ID } from '@th/clickhouse';
import { EventLoopPacer, METRICS, inSpan, prepareJsonBytes } from '@th/platform';
import { DEFAULT_GROUP_INSERT_OPTIONS, GroupInsert } from './group-insert';
import { RunCache } from './run-cache';
import { NewRunFilter } from './new-run-filter';
import { computeRun, emptyRun, mergeEvent, type ComputedRun, type MergedRun } from './run-merge';
import {
  keyOf,
  mergedFromRow,
  encodeRunRow,
  encodeTombstone,
  STORED_RUN_COLUMNS,
  type StoredRunRow,
} from './run-row';
import { INGEST_OPTIONS, type IngestOptions } from './ingest.options';
import { analyzeLlmRun, warmPriceMatching, warmTokenizer } from '@th/llm';
import { PriceMapCache, PriceMapRepository } from './price-map/price-map.repository';

type RunsMessage = BusMessage<TopicPayload<'runs'>>;
/** A message of the runs topic that carries a run event. */
type RunMessage = BusMessage<RunEvent>;

/** A run merged by a batch: the version to write and what its row needs. */
interface MergeResult {
  run: MergedRun;
  /** The cached version this one was merged onto (null: a new run, or a state read back). */
  base: MergedRun | null;
  computed: ComputedRun;
  oldKeys: string[];
  receivedAt: string;
  attachmentLines: string[];
  events: RunMessage[];
}

/**
 * Ids per lookup query. Embedded ClickHouse gets its parameters inlined in the query text, which may
 * not pass max_query_size (256 KiB): each id takes about 60 bytes there (the id and its id_order), so
 * 5,000 did not fit, and a batch with that many new runs failed on every retry.
 */
const LOOKUP_CHUNK = 2_000;

/** Runs the new-run filter remembers as written (about 100 bytes each) before its floor rises. */
const NEW_RUN_NOTES = 500_000;

/** Process-wide monotonic version: microseconds since the epoch, never repeating. */
let lastVersion = 0;
export function nextVersion(): number {
  lastVersion = Math.max(lastVersion + 1, Date.now() * 1000);
  return lastVersion;
}

/**
 * Runs checked together for having left the cache before their merge; the merge itself stops earlier when the
 * event-loop pacer is due (a slice of a few large runs can take longer than one of many small ones).
 */
const MERGE_CHECK = 256;

/**
 * The writer role of ingest: consumes run events in batches, merges every POST and PATCH of a run
 * with what is already stored, writes whole rows to ClickHouse, and only then lets the bus commit.
 */
@Injectable()
export class RunWriterService implements OnApplicationBootstrap {
  private readonly logger = new Logger('run-writer');
  private readonly cache: RunCache;
  /** Set where this writer is the only one (standalone): runs that cannot be stored yet are not looked up. */
  private readonly newRuns: NewRunFilter | null;
  /** Where every price-map write goes through this process, the maps stay in memory between batches. */
  private readonly prices: Pick<PriceMapRepository, 'listForTenants'>;
  private mergeLock: Promise<unknown> = Promise.resolve();
  /**
   * Runs that batches read back from ClickHouse, from the start of those lookups to the end of their
   * merge (a count per run, for batches that overlap): see releaseFinished.
   */
  private readonly pinned = new Map<string, number>();
  /** Finished runs written since the last release, to forget once their rows have landed. */
  private readonly finished: { key: string; run: MergedRun }[] = [];
  /** Where every batch's rows go: one insert at a time, shared by the batches ready meanwhile. */
  private readonly rows: GroupInsert;

  constructor(
    private readonly ch: ClickHouse,
    @Inject(INGEST_OPTIONS) private readonly options: IngestOptions,
    priceMaps: PriceMapRepository,
  ) {
    this.prices = options.soleWriter ? new PriceMapCache(priceMaps) : priceMaps;
    this.cache = new RunCache(options.writerCacheEntries);
    this.rows = new GroupInsert(ch, { ...DEFAULT_GROUP_INSERT_OPTIONS, lingerMs: options.writerLingerMs ?? DEFAULT_GROUP_INSERT_OPTIONS.lingerMs });
    this.newRuns = options.soleWriter ? new NewRunFilter(NEW_RUN_NOTES) : null;
  }

  async onApplicationBootstrap(): Promise<void> {
    if (!this.options.writer) return;
    this.startNewRunFilter();
    // Off the start-up path, but before load arrives in practice: LLM runs without usage need it.
    setImmediate(() => {
      warmTokenizer();
      warmPriceMatching();
    }).unref();
  }

  /** The runs topic's consumer options that come from the settings and this writer (see RunWriterConsumer). */
  consumerSettings(): Partial<SubscribeOptions> {
    return {
      maxBatchSize: this.options.writerMaxBatch,
      parallelBacklog: this.options.writerParallelBacklog,
      onAssignmentChange: () => {
        this.cache.clear();
        this.newRuns?.reset();
        this.startNewRunFilter();
      },
    };
  }

  /** Reads the filter's floor in the background: until then every run is looked up. */
  private startNewRunFilter(): void {
    this.newRuns?.start(this.ch).catch((err: unknown) => this.logger.warn(`new-run filter not started, every run is looked up: ${(err as Error).message}`));
  }

  /**
   * Only the merge itself is serialized (each batch sees the state the previous one left in the
   * cache); lookups of unknown runs, row serialization and the ClickHouse inserts of consecutive
   * batches overlap. Versions only grow, so whichever insert lands last, the newest version wins.
   */
  async handle(batch: RunsMessage[], hooks?: BatchHooks): Promise<{ rejected: Rejection<TopicPayload<'runs'>>[] }> {
    METRICS.writerBatchSize.observe(batch.length);
    // A large batch (a 25 MB request is some 20,000 events) is grouped, looked up, merged, derived and encoded in
    // slices that give the event loop way in between (the standalone service serves requests on the same loop).
    const pacer = new EventLoopPacer();
    const rejected: Rejection<TopicPayload<'runs'>>[] = [];
    const byRun = new Map<string, RunMessage[]>();
    const llmTenants = new Set<string>();
    for (const msg of batch) {
      if (pacer.due()) await pacer.yield();
      if (msg.value.kind !== 'run') {
        await this.deleteSession(msg.value);
        continue;
      }
      if (msg.value.fields.run_type === 'llm') llmTenants.add(msg.value.tenant_id);
      const key = RunCache.key(msg.value.tenant_id, msg.value.id);
      const list = byRun.get(key);
      if (list) list.push(msg as RunMessage);
      else byRun.set(key, [msg as RunMessage]);
    }
    // Price maps of the batch's LLM runs are read alongside the lookups, not after them.
    const prices = llmTenants.size > 0 ? this.prices.listForTenants([...llmTenants]) : null;
    prices?.catch(() => undefined); // awaited (and its failure thrown) in deriveLlm
    // Runs neither in memory nor certain to be new (see NewRunFilter) are read back from ClickHouse.
    const unknown = (k: string, list: RunMessage[]) => !this.cache.get(k) && (this.newRuns?.mayExist(k, list[0].value.id) ?? true);
    const requested: string[] = [];
    for (const [k, list] of byRun) {
      if (pacer.due()) await pacer.yield();
      // From here until its merge, a newer state another batch writes of a run this batch reads back must stay in
      // memory: pinned in the same step as the check that found it missing.
      if (unknown(k, list)) {
        requested.push(k);
        this.pinned.set(k, (this.pinned.get(k) ?? 0) + 1);
      }
    }
    let merged: MergeResult[] = [];
    try {
      const looked = await this.loadStates(requested, pacer);
      merged = await this.serialized(async () => {
        // A run found in the cache above may have left it since: released once another batch's rows
        // landed (see releaseFinished), or pushed out (the cache is bounded). Read it back now, inside
        // the merge lock, rather than merge into an empty state and overwrite its stored row. (Runs this
        // batch did look up are pinned instead.) Runs can leave the cache during that read too, so the
        // check is made again after every read and every yield: a slice's merge (synchronous) starts right after
        // a check that found every run of the slice in memory or read back.
        const asked = new Set(requested);
        const out: MergeResult[] = [];
        const runs = [...byRun];
        for (let at = 0; at < runs.length; ) {
          const slice = runs.slice(at, at + MERGE_CHECK);
          for (;;) {
            const pushedOut: string[] = [];
            for (const [k, list] of slice) if (!asked.has(k) && unknown(k, list)) pushedOut.push(k);
            if (pushedOut.length === 0) break;
            for (const k of pushedOut) asked.add(k);
            for (const [k, run] of await this.loadStates(pushedOut, pacer)) looked.set(k, run);
          }
          // The runs left unmerged when the pacer is due are checked again after the yield.
          at += this.merge(slice, looked, rejected, out, pacer);
          if (pacer.due()) await pacer.yield();
        }
        return out;
      });
    } finally {
      for (const k of requested) {
        const n = this.pinned.get(k)!;
        if (n > 1) this.pinned.set(k, n - 1);
        else this.pinned.delete(k);
      }
    }
    const llm = await this.deriveLlm(merged, prices, llmTenants, pacer);
    // A large document (a 25 MB inputs) is serialized and encoded here in slices; the row encoder below is synchronous.
    for (const m of merged) {
      if (pacer.due()) await pacer.yield();
      const f = m.run.fields;
      for (const v of [f.inputs, f.outputs, f.extra, f.events, f.serialized]) await prepareJsonBytes(v, pacer);
    }
    // The batch's rows, encoded straight into the next insert's body (RowBinary): no row strings to
    // keep alive until the insert is done. One write per slice of the pacer's length; the batch is done when
    // every slice has landed.
    // Self-tracing on: the batch's write (its rows' share of the grouped inserts) is a span of its own.
    const written = inSpan('insert runs', { 'tracehouse.rows': merged.length }, async () => {
      const writes: Promise<void>[] = [];
      for (let i = 0; i < merged.length; ) {
        if (pacer.due()) await pacer.yield();
        const attachmentLines: string[] = [];
        const landed = this.rows.write((w) => {
          do {
            const m = merged[i++];
            const mark = w.mark();
            try {
              const key = encodeRunRow(w, m.run, m.run.version, m.receivedAt, m.computed, llm.get(m.run) ?? null);
              // Every version (and delete marker) also lands in runs_by_id, through its view (migration 0014).
              for (const old of m.oldKeys) if (old !== key) encodeTombstone(w, m.run.tenant_id, m.run.id, old, m.run.version);
              attachmentLines.push(...m.attachmentLines);
            } catch (err) {
              w.rewind(mark);
              for (const msg of m.events) rejected.push({ message: msg, reason: `serialize failed: ${(err as Error).message}` });
            }
          } while (i < merged.length && !pacer.due());
        }, attachmentLines);
        landed.catch(() => undefined); // awaited below, with the others
        writes.push(landed);
      }
      // The next batch's merge and rows may be built while these rows are written.
      hooks?.writing();
      await Promise.all(writes);
    });
    try {
      await written;
    } catch (err) {
      // The cache already holds these versions: forget them, so the retry merges from what ClickHouse has.
      for (const m of merged) this.cache.delete(RunCache.key(m.run.tenant_id, m.run.id));
      METRICS.writerFailures.inc();
      throw err;
    }
    METRICS.writerRows.inc(merged.length);
    for (const m of merged) m.run.landed = true;
    // A finished run is seldom written again: once its row is in ClickHouse it may leave the cache (a
    // late event reads it back), so the cache holds the runs still in progress and the heap stays small.
    for (const m of merged) if (m.computed.status !== 'pending') this.finished.push({ key: RunCache.key(m.run.tenant_id, m.run.id), run: m.run });
    this.releaseFinished();
    this.retireReplaced(merged);
    METRICS.writerCacheEntries.set(this.cache.size);
    return { rejected };
  }

  /**
   * Lets go of the field values of versions no merge can start from any more: a version the cache no
   * longer holds (a newer one replaced it, or it was pushed out) once its own row has landed. Without
   * this, such a version still pointed at its request's parsed values after it died, and V8 kept
   * them: a long-lived object (one that outlived two young-generation collections and was promoted)
   * keeps what it points to alive through every later young collection until the next full one,
   * even once nothing reaches it. Under bench/ingest that made each scavenge keep and promote the
   * parsed bodies of most runs (8-11 MB promoted a scavenge; 3-6 MB with this).
   */
  private retireReplaced(merged: { run: MergedRun; base: MergedRun | null }[]): void {
    for (const m of merged) {
      const key = RunCache.key(m.run.tenant_id, m.run.id);
      // A batch reading this run back may hold a version it found in the cache (see loadStates).
      if (this.pinned.has(key)) continue;
      const current = this.cache.get(key);
      if (current !== m.run) retire(m.run);
      if (m.base && m.base !== current && m.base.landed) retire(m.base);
    }
  }

  /**
   * LLM runs: tokens (supplied or estimated), costs (explicit or from the workspace's price map, then the
   * default table) and the normalized view, all derived from the merged run alone, so a redelivered or
   * reordered event yields the same row. Price maps are read only when the batch holds LLM runs.
   */
  private async deriveLlm(
    merged: { run: MergedRun; computed: ComputedRun }[],
    early: Promise<Map<string, ModelPriceMap[]>> | null,
    earlyTenants: Set<string>,
    pacer: EventLoopPacer,
  ): Promise<Map<MergedRun, object>> {
    const out = new Map<MergedRun, object>();
    const llmRuns = merged.filter((m) => m.run.fields.run_type === 'llm');
    if (llmRuns.length === 0) return out;
    const tenants = [...new Set(llmRuns.map((m) => m.run.tenant_id))];
    // An LLM run whose type came from its stored row may belong to a tenant not read early.
    const prices = early && tenants.every((t) => earlyTenants.has(t)) ? await early : await this.prices.listForTenants(tenants);
    for (const { run, computed } of llmRuns) {
      if (pacer.due()) await pacer.yield();
      const f = run.fields;
      try {
        const a = analyzeLlmRun({ inputs: f.inputs, outputs: f.outputs, extra: f.extra, start_time: computed.start_time }, prices.get(run.tenant_id) ?? []);
        computed.prompt_tokens = a.prompt_tokens;
        computed.completion_tokens = a.completion_tokens;
        computed.total_tokens = a.total_tokens;
        computed.prompt_cost = a.prompt_cost;
        computed.completion_cost = a.completion_cost;
        computed.total_cost = a.total_cost;
        out.set(run, a.view);
      } catch (err) {
        // The run is stored without the derived view rather than lost.
        this.logger.warn(`LLM view of run ${run.id} failed: ${(err as Error).message}`);
      }
    }
    return out;
  }

  /**
   * Forgets the finished runs whose rows have landed, except those a batch is reading back (pinned):
   * that batch's lookup may have read an older row than this one, and its merge must find this state in
   * memory (else it would merge into the older state and overwrite the newer row); such a run simply
   * stays cached. A batch that found a run in memory and finds it gone at its merge reads it back then,
   * inside the merge lock (its row has landed). A run a later batch has replaced meanwhile stays (that
   * batch's write is still to land).
   *
   * Released at once, rather than only at an instant when no batch at all is between lookup and merge:
   * under continuous load such instants can be rare, and the finished runs waiting for one stayed in
   * memory meanwhile.
   */
  private releaseFinished(): void {
    for (const f of this.finished) {
      if (!this.pinned.has(f.key) && this.cache.get(f.key) === f.run) {
        this.cache.delete(f.key);
        retire(f.run);
      }
    }
    this.finished.length = 0;
  }

  private serialized<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.mergeLock.then(fn);
    this.mergeLock = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /**
   * Folds runs into their current states (memory first: it is fresher than any lookup), in order, appending to
   * `out`, until every run is merged or the pacer is due (after one run at least). Returns how many runs it took.
   */
  private merge(
    runs: readonly [string, RunMessage[]][],
    looked: Map<string, MergedRun>,
    rejected: Rejection<TopicPayload<'runs'>>[],
    out: MergeResult[],
    pacer: EventLoopPacer,
  ): number {
    let taken = 0;
    while (taken < runs.length) {
      const [key, list] = runs[taken++];
      const m = this.mergeRun(key, list, looked, rejected);
      if (m) out.push(m);
      if (pacer.due()) break;
    }
    return taken;
  }

  /** One run's events folded into its current state; null for a pure redelivery or a run that cannot be merged. */
  private mergeRun(key: string, list: RunMessage[], looked: Map<string, MergedRun>, rejected: Rejection<TopicPayload<'runs'>>[]): MergeResult | null {
    const cached = this.cache.get(key);
    const base = cached ?? looked.get(key);
    const first = list[0].value;
    const run: MergedRun = base ? cloneRun(base) : emptyRun(first.tenant_id, first.id);
    let changed = !base;
    const version = nextVersion();
    const attachmentLines: string[] = [];
    try {
      for (const { value: event } of list) {
        if (mergeEvent(run, event)) changed = true;
        for (const a of event.attachments ?? []) {
          run.attachments[a.name] = { mime_type: a.mime_type, size: Buffer.byteLength(a.data_base64, 'base64') };
          attachmentLines.push(
            JSON.stringify({ tenant_id: run.tenant_id, run_id: run.id, name: a.name, mime_type: a.mime_type, data: a.data_base64, version }),
          );
          changed = true;
        }
      }
      if (!changed) return null; // a pure redelivery: the stored row is already this run
      const oldKeys = run.storedKeys;
      const computed = computeRun(run, first.received_at);
      run.storedKeys = [keyOf({ session_id: computed.session_id, start_time: computed.start_time })];
      run.version = version;
      this.cache.set(key, run);
      this.newRuns?.note(key, run.id);
      return { run, base: cached ?? null, computed, oldKeys, receivedAt: first.received_at, attachmentLines, events: list };
    } catch (err) {
      // A run that cannot be merged is poison: dead-letter its events, keep the rest moving.
      for (const msg of list) rejected.push({ message: msg, reason: `merge failed: ${(err as Error).message}` });
      return null;
    }
  }

  /** Current state of each run: from memory when this writer wrote it last, else from ClickHouse. */
  private async loadStates(keys: string[], pacer: EventLoopPacer): Promise<Map<string, MergedRun>> {
    const out = new Map<string, MergedRun>();
    const missing = new Map<string, string[]>(); // tenant -> ids
    for (const key of keys) {
      if (pacer.due()) await pacer.yield();
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
      for (let i = 0; i < ids.length; i += LOOKUP_CHUNK) {
        if (pacer.due()) await pacer.yield();
        const chunk = ids.slice(i, i + LOOKUP_CHUNK);
        // Phase 1, by primary key: under which sorting keys each run lives. New runs stop here.
        // No FINAL (a merge of every part on the read path): the newest version per sorting key is picked here.
        const byIds = byIdsCondition('ids', chunk);
        const locatorRows = await this.ch.query<{ id: string; session_id: string; start_time: string; version: number | string; is_deleted: number }>(
          `SELECT id, session_id, start_time, version, is_deleted FROM ${RUNS_BY_ID} WHERE tenant_id = {tenant:UUID} AND ${byIds.sql}`,
          { tenant, ...byIds.params },
        );
        if (locatorRows.length === 0) continue;
        const newest = new Map<string, (typeof locatorRows)[number]>();
        for (const l of locatorRows) {
          const k = `${l.id}|${keyOf({ session_id: l.session_id, start_time: l.start_time })}`;
          const prev = newest.get(k);
          if (!prev || Number(l.version) > Number(prev.version)) newest.set(k, l);
        }
        const located = [...newest.values()];
        const liveKeys = new Map<string, string[]>();
        for (const l of located) {
          if (Number(l.is_deleted) === 1) continue;
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
          if (pacer.due()) await pacer.yield();
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
      `DELETE FROM ${RUNS_BY_ID} WHERE tenant_id = {tenant:UUID} AND session_id = {session:UUID}`,
      { tenant: c.tenant_id, session: c.session_id },
      { lightweight_deletes_sync: 2 },
    );
    this.cache.deleteWhere((r) => r.tenant_id === c.tenant_id && r.fields.session_id === c.session_id);
  }
}

/**
 * Drops a version's field values once nothing merges from it or writes it again (see retireReplaced):
 * it leaves the cache for good, and a later event for the run starts from a newer version or from
 * what ClickHouse holds.
 */
function retire(run: MergedRun): void {
  // One shared, frozen empty object: no new young object written into an old one for each run.
  run.fields = RETIRED_FIELDS;
}
const RETIRED_FIELDS: MergedRun['fields'] = Object.freeze({});

function cloneRun(run: MergedRun): MergedRun {
  return {
    tenant_id: run.tenant_id,
    id: run.id,
    fields: { ...run.fields },
    priority: { ...run.priority },
    attachments: { ...run.attachments },
    storedKeys: [...run.storedKeys],
    version: run.version,
  };
}
