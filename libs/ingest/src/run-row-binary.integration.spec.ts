import { randomUUID } from 'node:crypto';
import { RowBinaryBuffer } from '@th/clickhouse';
import type { RunEvent } from '@th/contracts';
import { EventLoopPacer, JSON_TEXT_SPLIT_NODES, jsonBytesOf, prepareJsonBytes } from '@th/platform';
import { suiteClickHouse } from '@th/testing';
import { computeRun, emptyRun, mergeEvent, type MergedRun } from './run-merge';
import { encodeRunRow, encodeTombstone, keyOf, RUN_ROW_COLUMNS, RUN_ROW_INSERT_SETTINGS, runRow } from './run-row';

/**
 * The writer's RowBinary rows against the JSON rows they replaced, on the engine (chDB): the same runs
 * written both ways into two copies of the runs table must be stored identically, column by column.
 */
describe('run rows as RowBinary on ClickHouse (chDB)', () => {
  const ch = suiteClickHouse('run-row-binary');
  const T = randomUUID();
  const S = randomUUID();
  const received = '2026-11-25T07:00:00.123456Z';

  const run = (fields: RunEvent['fields'], patch?: RunEvent['fields'], id = randomUUID()): MergedRun => {
    const r = emptyRun(T, id);
    mergeEvent(r, { kind: 'run', op: 'post', tenant_id: T, id, received_at: received, fields: { session_id: S, ...fields } });
    if (patch) mergeEvent(r, { kind: 'run', op: 'patch', tenant_id: T, id, received_at: received, fields: patch });
    return r;
  };

  const parent = randomUUID();
  const runs: { run: MergedRun; llm: object | null }[] = [
    { run: run({ name: 'plain', run_type: 'chain', start_time: '2026-11-25T07:00:00.000001Z', inputs: { q: 'a"b\\c' } }), llm: null },
    // Raw newlines (an empty line among them), quotes and non-ASCII in free text.
    {
      run: run(
        { name: 'multi\n\nline "ünïcödé" \u{1F600} end', run_type: 'tool', start_time: '2026-11-25T07:00:01.5Z', tags: ['t\n\n1', 'ü', ''], extra: { metadata: { k: 'v\n\nw', n: 3, nested: { a: [1, 2] } } } },
        { end_time: '2026-11-25T07:00:02.000000Z', outputs: { text: 'x'.repeat(300) }, error: 'boom\n\ntrace' },
      ),
      llm: null,
    },
    // A child: parent ids, reference example, a trace tier with retention, a start time given with an offset.
    {
      run: run({
        name: 'child',
        run_type: 'retriever',
        start_time: '2026-11-25T09:00:00.250+02:00',
        trace_id: parent,
        parent_run_id: parent,
        dotted_order: `20261125T070000000001Z${parent}.20261125T070000250000Z${randomUUID()}`,
        reference_example_id: randomUUID(),
        trace_tier: 'shortlived',
        retention_days: { shortlived: 14, longlived: 400 },
      } as RunEvent['fields']),
      llm: null,
    },
    // An LLM run with tokens, costs, streamed events (first token time), attachments and an LLM view.
    {
      run: run(
        { name: 'llm', run_type: 'llm', start_time: '2026-11-25T07:00:03.000000Z', inputs: { messages: [{ role: 'user', content: 'hi' }] }, events: [{ name: 'new_token', time: '2026-11-25T07:00:03.400000Z' }] },
        { end_time: '2026-11-25T07:00:04.000000Z', outputs: { usage_metadata: { input_tokens: 12, output_tokens: 30, total_tokens: 42 } }, extra: { metadata: { ls_provider: 'openai' } } } as RunEvent['fields'],
      ),
      llm: { provider: 'openai', model: null, messages: ['a\n\nb'] },
    },
    // Inputs and outputs that are not objects; start times far from now on both sides.
    { run: run({ name: 'scalar', run_type: 'chain', start_time: '1931-02-03T04:05:06.000007Z', inputs: 'plain "text"' as never, outputs: 42 as never }), llm: null },
    { run: run({ name: 'future', run_type: 'chain', start_time: '2250-12-31T23:59:59.999999Z' }), llm: null },
    // Inputs large enough for the writer to encode ahead (prepareJsonBytes), with non-ASCII text.
    {
      run: run({ name: 'large', run_type: 'chain', start_time: '2026-11-25T07:00:05.000000Z', inputs: Object.fromEntries(Array.from({ length: JSON_TEXT_SPLIT_NODES }, (_, i) => [`k${i}`, i % 2 ? `ü${i}\n` : { n: i }])) }),
      llm: null,
    },
  ];
  runs[3].run.attachments = { 'a.txt': { mime_type: 'text/plain', size: 2 } } as MergedRun['attachments'];

  beforeAll(async () => {
    await ch().command('CREATE TABLE IF NOT EXISTS runs_json AS runs');
    await ch().command('CREATE TABLE IF NOT EXISTS runs_binary AS runs');
  });

  const stored = async (table: string) =>
    ch().query<Record<string, unknown>>(`SELECT * EXCEPT (llm), llm FROM ${table} WHERE tenant_id = {t:UUID} ORDER BY id, version`, { t: T });

  it('stores every column as the JSON row did, for runs of every shape', async () => {
    const w = new RowBinaryBuffer(256); // small: the buffer grows while rows are written
    const lines: string[] = [];
    for (const { run: r } of runs) await prepareJsonBytes(r.fields.inputs, new EventLoopPacer());
    expect(jsonBytesOf(runs[runs.length - 1].run.fields.inputs)).toBeDefined();
    for (const [i, { run: r, llm }] of runs.entries()) {
      const computed = computeRun(r, received);
      const key = encodeRunRow(w, r, 1000 + i, received, computed, llm);
      expect(key).toBe(keyOf({ session_id: computed.session_id, start_time: computed.start_time }));
      lines.push(runRow(r, 1000 + i, received, computed, llm).line);
    }
    expect(w.body().includes('\n\n')).toBe(true); // the body holds empty lines: the in-process insert must not stop there
    await ch().insertJsonCompactEachRow('runs_json', RUN_ROW_COLUMNS, Buffer.from(lines.join('\n')), RUN_ROW_INSERT_SETTINGS);
    await ch().insertRowBinary('runs_binary', RUN_ROW_COLUMNS, w.body());
    const json = await stored('runs_json');
    expect(json).toHaveLength(runs.length);
    expect(await stored('runs_binary')).toEqual(json);
    const byName = new Map(json.map((r) => [r.name, r]));
    expect(byName.get('multi\n\nline "ünïcödé" \u{1F600} end')).toMatchObject({ error: 'boom\n\ntrace', tags: ['t\n\n1', 'ü', ''], status: 'error' });
    expect(byName.get('llm')).toMatchObject({ total_tokens: 42, prompt_tokens: 12, completion_tokens: 30, llm: JSON.stringify(runs[3].llm) });
    expect(byName.get('future')?.start_time).toBe('2250-12-31T23:59:59.999999Z');
  });

  it('a lone surrogate in text is stored as U+FFFD (the JSON row was refused by the engine: a failed insert)', async () => {
    const r = run({ name: 'half \ud800 pair', run_type: 'chain', start_time: '2026-11-25T07:00:00.000001Z' });
    const w = new RowBinaryBuffer();
    encodeRunRow(w, r, 1, received);
    await ch().insertRowBinary('runs_binary', RUN_ROW_COLUMNS, w.body());
    const rows = await ch().query<{ name: string }>('SELECT name FROM runs_binary WHERE tenant_id = {t:UUID} AND id = {id:UUID}', { t: T, id: r.id });
    expect(rows).toEqual([{ name: 'half \ufffd pair' }]);
    await expect(ch().insertJsonCompactEachRow('runs_json', RUN_ROW_COLUMNS, Buffer.from(runRow(r, 1, received).line), RUN_ROW_INSERT_SETTINGS)).rejects.toThrow('surrogate');
  });

  it('a delete marker holds its key, version and is_deleted, never expires, and defaults elsewhere', async () => {
    const id = randomUUID();
    const w = new RowBinaryBuffer(16);
    encodeTombstone(w, T, id, `${S}|2026-11-22 04:04:29.623001`, 9);
    await ch().insertRowBinary('runs_binary', RUN_ROW_COLUMNS, w.body());
    const [row] = await ch().query<Record<string, unknown>>('SELECT * FROM runs_binary WHERE tenant_id = {t:UUID} AND id = {id:UUID}', { t: T, id });
    expect(row).toMatchObject({ session_id: S, id, trace_id: id, start_time: '2026-11-22T04:04:29.623001Z', expires_at: '2106-01-01T00:00:00Z', version: 9, is_deleted: 1 });
    expect(row).toMatchObject({ name: '', parent_run_id: null, parent_run_ids: [], error: null, tags: [], metadata: {}, total_cost: null, end_time: null, merge_state: '', llm: '' });
  });

  it('a body cut short is refused whole; a row that cannot be encoded throws before anything is written', async () => {
    const w = new RowBinaryBuffer();
    encodeRunRow(w, runs[0].run, 1, received);
    encodeRunRow(w, runs[1].run, 1, received);
    const before = await ch().query<{ c: number }>('SELECT count() AS c FROM runs_binary');
    await expect(ch().insertRowBinary('runs_binary', RUN_ROW_COLUMNS, w.body().subarray(0, w.body().length - 5))).rejects.toThrow();
    expect(await ch().query<{ c: number }>('SELECT count() AS c FROM runs_binary')).toEqual(before);

    const bad = run({ name: 'bad id', run_type: 'chain', start_time: '2026-11-25T07:00:00.000001Z' }, undefined, 'not-a-uuid-at-all-but-36-characters!');
    const mark = w.mark();
    expect(() => encodeRunRow(w, bad, 1, received)).toThrow('not a UUID');
    w.rewind(mark);
    await ch().insertRowBinary('runs_binary', RUN_ROW_COLUMNS, w.body());
    expect((await ch().query<{ c: number }>('SELECT count() AS c FROM runs_binary'))[0].c).toBe(before[0].c + 2);
  });
});
