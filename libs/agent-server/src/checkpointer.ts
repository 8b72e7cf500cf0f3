import type { Pool } from 'pg';
import type { RunnableConfig } from '@langchain/core/runnables';
import { WRITES_IDX_MAP, type ChannelVersions, type Checkpoint, type CheckpointMetadata, type CheckpointTuple, type PendingWrite } from '@langchain/langgraph-checkpoint';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';

/** How long a sealed run's later writes are dropped. */
const SEAL_MS = 10 * 60_000;

const toBuffer = (b: Uint8Array | undefined): Buffer | null => (b === undefined ? null : Buffer.from(b.buffer, b.byteOffset, b.byteLength));

/**
 * The stock Postgres checkpointer (same tables, same reads: history, state at a checkpoint, forks) with
 * three changes:
 *
 * - Fork-safe channel versions. The stock saver numbers versions 1, 2, 3…, and blobs are keyed by
 *   (thread, namespace, channel, version): two checkpoints forked from one parent (a state update at an
 *   earlier checkpoint, then another branch) would both write version n+1 of a channel and the second
 *   blob would be dropped (ON CONFLICT DO NOTHING), so the fork would read the other branch's values.
 *   Versions stay numbers (comparable with ones already stored) but get a random fraction: still
 *   increasing, distinct across forks.
 * - One statement per write. The stock saver writes a checkpoint as BEGIN, one INSERT per channel blob,
 *   the checkpoint, COMMIT, and a task's writes as BEGIN, one INSERT per write, COMMIT. Here each is a
 *   single statement (atomic on its own): the blobs as one multi-row INSERT in a CTE of the checkpoint's
 *   INSERT, the writes as one multi-row INSERT. Same rows, same conflict rules, a fraction of the round trips.
 *   Both are named (prepared once per connection).
 * - A thread this process is running a run on, and which had no checkpoint when the run was taken, is
 *   known to have none until the run writes its first: the run's opening read of the latest checkpoint
 *   is answered without a query. Nothing else writes a thread's checkpoints while a run holds it (a state
 *   update is refused while a run is active, and no other worker takes the thread).
 * - Writes are tracked by run (`configurable.run_id`), and a rolled-back run's can be sealed: a graph
 *   stream rejects as soon as its run is cancelled, while the graph's loop goes on in the background
 *   and may still be writing the checkpoint of its last step. `seal` waits for the run's writes in
 *   flight and drops any it makes later, so deleting the run's checkpoints leaves none behind.
 */
export class AgentCheckpointer extends PostgresSaver {
  private readonly putSql: string;
  private readonly upsertWritesSql: string;
  private readonly insertWritesSql: string;
  /** Threads known to have no checkpoint in the root namespace (see the class comment), by thread id. */
  private readonly empty = new Set<string>();
  /** Writes in flight, by run id. */
  private readonly inflight = new Map<string, Set<Promise<unknown>>>();
  /** Sealed runs (their later writes are dropped), by run id, with when they were sealed. */
  private readonly sealed = new Map<string, number>();

  constructor(
    private readonly db: Pool,
    private readonly schema: string,
  ) {
    super(db, undefined, { schema });
    const t = (name: string) => `"${schema}".${name}`;
    this.putSql = `WITH b AS (
        INSERT INTO ${t('checkpoint_blobs')} (thread_id, checkpoint_ns, channel, version, type, blob)
        SELECT $1, $2, * FROM unnest($7::text[], $8::text[], $9::text[], $10::bytea[])
        ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO NOTHING)
      INSERT INTO ${t('checkpoints')} (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata)
      VALUES ($1, $2, $3, $4, $5, $6)
      ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET checkpoint = EXCLUDED.checkpoint, metadata = EXCLUDED.metadata`;
    const writes = `INSERT INTO ${t('checkpoint_writes')} (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob)
      SELECT $1, $2, $3, $4, * FROM unnest($5::int[], $6::text[], $7::text[], $8::bytea[])
      ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)`;
    this.upsertWritesSql = `${writes} DO UPDATE SET channel = EXCLUDED.channel, type = EXCLUDED.type, blob = EXCLUDED.blob`;
    this.insertWritesSql = `${writes} DO NOTHING`;
  }

  /** Called by the worker when it starts a run on a thread that has no checkpoint; `forget` once the run has ended. */
  markEmpty(threadId: string): void {
    this.empty.add(threadId);
  }

  forget(threadId: string): void {
    this.empty.delete(threadId);
  }

  /**
   * Drops the run's later checkpoint writes, and resolves once those already made have settled. A
   * run's seal is kept for SEAL_MS (its graph's loop has long stopped by then).
   */
  async seal(runId: string): Promise<void> {
    const now = Date.now();
    for (const [id, at] of this.sealed) {
      if (now - at < SEAL_MS) break; // in insertion order, so in order of age
      this.sealed.delete(id);
    }
    this.sealed.set(runId, now);
    for (let pending = this.inflight.get(runId); pending?.size; pending = this.inflight.get(runId)) {
      await Promise.allSettled([...pending]);
    }
  }

  /** Runs a write of the run's unless the run is sealed; tracked until it settles. */
  private track<T>(runId: unknown, write: () => Promise<T>, dropped: () => T): Promise<T> {
    if (typeof runId !== 'string') return write();
    if (this.sealed.has(runId)) return Promise.resolve(dropped());
    const p = write();
    let set = this.inflight.get(runId);
    if (!set) this.inflight.set(runId, (set = new Set()));
    set.add(p);
    const done = () => {
      set.delete(p);
      if (!set.size && this.inflight.get(runId) === set) this.inflight.delete(runId);
    };
    p.then(done, done);
    return p;
  }

  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const cf = (config.configurable ?? {}) as { thread_id?: string; checkpoint_ns?: string; checkpoint_id?: string };
    if (cf.thread_id !== undefined && !cf.checkpoint_id && (cf.checkpoint_ns ?? '') === '' && this.empty.has(String(cf.thread_id))) return undefined;
    return super.getTuple(config);
  }

  override getNextVersion(current: number | undefined): number {
    const base = typeof current === 'number' ? Math.floor(current) : 0;
    return base + 1 + Math.floor(Math.random() * 1e9) / 1e10;
  }

  override put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    if (config.configurable === undefined) return Promise.reject(new Error('Missing "configurable" field in "config" param'));
    const { thread_id, checkpoint_ns = '' } = config.configurable as { thread_id: string; checkpoint_ns?: string };
    return this.track(
      config.configurable.run_id,
      () => this.write(config, checkpoint, metadata, newVersions),
      () => ({ configurable: { thread_id, checkpoint_ns, checkpoint_id: checkpoint.id } }),
    );
  }

  override putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string): Promise<void> {
    return this.track(
      config.configurable?.run_id,
      () => this.writeWrites(config, writes, taskId),
      () => undefined,
    );
  }

  private async write(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    const { thread_id, checkpoint_ns = '', checkpoint_id } = config.configurable as { thread_id: string; checkpoint_ns?: string; checkpoint_id?: string };
    if (checkpoint_ns === '') this.empty.delete(String(thread_id));
    const [blobs, meta] = await Promise.all([this._dumpBlobs(thread_id, checkpoint_ns, checkpoint.channel_values, newVersions), this._dumpMetadata(metadata)]);
    await this.db.query({ name: `${this.schema}_ckpt_put`, text: this.putSql, values: [
      thread_id,
      checkpoint_ns,
      checkpoint.id,
      checkpoint_id,
      this._dumpCheckpoint(checkpoint),
      meta,
      blobs.map((b) => b[2]),
      blobs.map((b) => b[3]),
      blobs.map((b) => b[4]),
      blobs.map((b) => toBuffer(b[5])),
    ] });
    return { configurable: { thread_id, checkpoint_ns, checkpoint_id: checkpoint.id } };
  }

  private async writeWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string): Promise<void> {
    const cf = (config.configurable ?? {}) as { thread_id?: string; checkpoint_ns?: string; checkpoint_id?: string };
    // Only special channels (errors, interrupts, resumes) overwrite; a task's ordinary writes are kept as first stored.
    const upsert = writes.every((w) => w[0] in WRITES_IDX_MAP);
    const dumped = await this._dumpWrites(cf.thread_id as string, cf.checkpoint_ns as string, cf.checkpoint_id as string, taskId, writes);
    // One multi-row INSERT may not touch a key twice: keep what the stock saver's row-by-row statements would leave (the last for an upsert, else the first).
    const byIdx = new Map<number, (typeof dumped)[number]>();
    for (const w of dumped) if (upsert || !byIdx.has(w[4])) byIdx.set(w[4], w);
    const rows = [...byIdx.values()];
    if (!rows.length) return;
    await this.db.query({ name: `${this.schema}_ckpt_writes_${upsert ? 'upsert' : 'insert'}`, text: upsert ? this.upsertWritesSql : this.insertWritesSql, values: [
      cf.thread_id,
      cf.checkpoint_ns,
      cf.checkpoint_id,
      taskId,
      rows.map((w) => w[4]),
      rows.map((w) => w[5]),
      rows.map((w) => w[6]),
      rows.map((w) => toBuffer(w[7])),
    ] });
  }
}
