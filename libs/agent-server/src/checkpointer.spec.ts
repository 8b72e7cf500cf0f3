import { Pool } from 'pg';
import { emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';
import { createTestDatabase } from '@th/testing';
import { AgentCheckpointer } from './checkpointer';

const SCHEMA = 'ckpt_spec';

describe('AgentCheckpointer seal (real PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let pool: Pool;
  let saver: AgentCheckpointer;

  beforeAll(async () => {
    db = await createTestDatabase('th_ckpt');
    pool = new Pool({ connectionString: db.url, max: 4 });
    saver = new AgentCheckpointer(pool, SCHEMA);
    await saver.setup();
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  const config = (threadId: string, runId: string) => ({ configurable: { thread_id: threadId, checkpoint_ns: '', run_id: runId } });
  const checkpoint = (value: string) => {
    const c = emptyCheckpoint();
    c.id = uuid6(-1);
    c.channel_values = { messages: value };
    c.channel_versions = { messages: 1 };
    return c;
  };
  const stored = async (threadId: string) =>
    Number((await pool.query(`SELECT count(*) AS n FROM ${SCHEMA}.checkpoints WHERE thread_id = $1`, [threadId])).rows[0].n);
  const storedWrites = async (threadId: string) =>
    Number((await pool.query(`SELECT count(*) AS n FROM ${SCHEMA}.checkpoint_writes WHERE thread_id = $1`, [threadId])).rows[0].n);

  it('waits for the run’s writes in flight, then drops its later ones; other runs write as before', async () => {
    const thread = 't-seal';
    // a write started before the seal: seal resolves only once it is stored
    const first = saver.put(config(thread, 'run-a'), checkpoint('one'), { source: 'input', step: -1, parents: {} }, { messages: 1 });
    await saver.seal('run-a');
    expect(await stored(thread)).toBe(1);
    const cfg = await first;

    // after the seal: the run's checkpoints and writes are answered but not stored
    const later = checkpoint('two');
    const answered = await saver.put(config(thread, 'run-a'), later, { source: 'loop', step: 0, parents: {} }, { messages: 2 });
    expect(answered.configurable).toEqual({ thread_id: thread, checkpoint_ns: '', checkpoint_id: later.id });
    await saver.putWrites({ configurable: { ...cfg.configurable, run_id: 'run-a' } }, [['messages', 'x']], 'task-1');
    expect(await stored(thread)).toBe(1);
    expect(await storedWrites(thread)).toBe(0);

    // another run on the same thread is not sealed
    await saver.put(config(thread, 'run-b'), checkpoint('three'), { source: 'loop', step: 1, parents: {} }, { messages: 3 });
    await saver.putWrites({ configurable: { ...cfg.configurable, run_id: 'run-b' } }, [['messages', 'y']], 'task-2');
    expect(await stored(thread)).toBe(2);
    expect(await storedWrites(thread)).toBe(1);
  });

  it('resolves at once for a run with nothing in flight, and writes without a run id are stored', async () => {
    await saver.seal('run-idle');
    await saver.put({ configurable: { thread_id: 't-plain', checkpoint_ns: '' } }, checkpoint('plain'), { source: 'update', step: 0, parents: {} }, { messages: 1 });
    expect(await stored('t-plain')).toBe(1);
  });

  it('a failed write still lets the seal resolve', async () => {
    // PostgreSQL refuses a NUL character in jsonb metadata
    const meta = { source: 'loop', step: 0, parents: {}, note: 'a\u0000b' } as const;
    const failing = saver.put(config('t-fail', 'run-f'), checkpoint('x'), meta, { messages: 1 });
    failing.catch(() => undefined);
    await saver.seal('run-f');
    await expect(failing).rejects.toThrow();
    expect(await stored('t-fail')).toBe(0);
  });
});
