import type { RunEvent } from '@th/contracts';
import { emptyRun, mergeEvent, type MergedRun } from './run-merge';
import { mergeStateText, RUN_ROW_COLUMNS, rowObject, runRow } from './run-row';

const T = '11111111-1111-4111-8111-111111111111';
const ID = '22222222-2222-4222-8222-222222222222';
const ev = (op: 'post' | 'patch', fields: RunEvent['fields']): RunEvent => ({ kind: 'run', op, tenant_id: T, id: ID, received_at: '2026-11-22T04:04:29.623001Z', fields });

describe('run rows written again', () => {
  it('a run patched after its first write gives the row of the same run merged from scratch', () => {
    const run = emptyRun(T, ID);
    mergeEvent(run, ev('post', { name: 'n', run_type: 'chain', start_time: '2026-11-22T04:04:29.623001Z', inputs: { q: 'a"b' }, outputs: { v: 1 } }));
    // Objects go into the row as themselves; the engine reads their JSON text into the String column (RUN_ROW_INSERT_SETTINGS).
    const first = rowObject(RUN_ROW_COLUMNS, runRow(run, 1, '2026-11-22T04:04:29.623001Z').line);
    expect(first.inputs).toEqual({ q: 'a"b' });
    expect(first.outputs).toEqual({ v: 1 });
    expect(first.events).toBe('');

    mergeEvent(run, ev('patch', { outputs: { v: 2 }, end_time: '2026-11-22T04:04:30.000000Z' }));
    const second = rowObject(RUN_ROW_COLUMNS, runRow(run, 2, '2026-11-22T04:04:29.623001Z').line);
    expect(second.outputs).toEqual({ v: 2 });
    expect(second.inputs).toEqual({ q: 'a"b' });
    expect(second.status).toBe('success');

    // The same bytes as a run serialized from scratch.
    const fresh = emptyRun(T, ID);
    mergeEvent(fresh, ev('post', { name: 'n', run_type: 'chain', start_time: '2026-11-22T04:04:29.623001Z', inputs: { q: 'a"b' }, outputs: { v: 1 } }));
    mergeEvent(fresh, ev('patch', { outputs: { v: 2 }, end_time: '2026-11-22T04:04:30.000000Z' }));
    expect(runRow(fresh, 2, '2026-11-22T04:04:29.623001Z').line).toBe(runRow(run, 2, '2026-11-22T04:04:29.623001Z').line);
  });

  it('an LLM view and attachments go in as objects, read as their JSON text', () => {
    const run = emptyRun(T, ID);
    mergeEvent(run, ev('post', { name: 'n', run_type: 'llm', start_time: '2026-11-22T04:04:29.623001Z' }));
    run.attachments = { 'a.txt': { mime_type: 'text/plain', size: 2 } };
    const row = rowObject(RUN_ROW_COLUMNS, runRow(run, 1, '2026-11-22T04:04:29.623001Z', undefined, { model: 'gpt-4o' }).line);
    expect(row.llm).toEqual({ model: 'gpt-4o' });
    expect(row.attachments).toEqual({ 'a.txt': { mime_type: 'text/plain', size: 2 } });
    expect(row.feedback_stats).toBe('');
  });
});

describe('run row fields that are not objects', () => {
  it('keeps a string or number input as a JSON string literal of its JSON text', () => {
    const run = emptyRun(T, ID);
    mergeEvent(run, ev('post', { name: 'n', run_type: 'chain', start_time: '2026-11-22T04:04:29.623001Z', inputs: 'plain "text"' as never, outputs: 42 as never }));
    const row = rowObject(RUN_ROW_COLUMNS, runRow(run, 1, '2026-11-22T04:04:29.623001Z').line);
    expect(row.inputs).toBe(JSON.stringify('plain "text"'));
    expect(row.outputs).toBe('42');
    expect(row.llm).toBe('');
    expect(row.merge_state).toEqual({ p: run.priority });
  });
});

describe('rows as JSONCompactEachRow', () => {
  it('a run row has one value per column', () => {
    const run = emptyRun(T, ID);
    mergeEvent(run, ev('post', { name: 'n', run_type: 'chain', start_time: '2026-11-22T04:04:29.623001Z', inputs: { q: 1 } }));
    const values = JSON.parse(runRow(run, 1, '2026-11-22T04:04:29.623001Z').line) as unknown[];
    expect(values).toHaveLength(RUN_ROW_COLUMNS.length);
    expect(new Set(RUN_ROW_COLUMNS).size).toBe(RUN_ROW_COLUMNS.length);
  });

  it('rowObject refuses a line whose values do not match the columns', () => {
    expect(() => rowObject(RUN_ROW_COLUMNS, '[1,2]')).toThrow(`row has 2 values for ${RUN_ROW_COLUMNS.length} columns`);
  });
});

describe('mergeStateText', () => {
  it('writes the text JSON.stringify writes for the merge state, keys in the same order', () => {
    const cases: [Record<string, unknown>, Record<string, number> | undefined][] = [
      [{}, undefined],
      [{ session_id: 2, trace_id: 2, inputs: 2, extra: 1, outputs: 2, end_time: 2 }, undefined],
      [{ outputs: 2, inputs: 1, name: 2 }, { longlived: 400, shortlived: 14 }],
      [{ inputs: 2 }, {}],
      [{ inputs: 2, skipped: undefined, name: 1 }, undefined],
      // what the fast path does not write itself
      [{ 'odd-key': 1 }, undefined],
      [{ 'q"uote': 2 }, { shortlived: 14 }],
      [{ inputs: 1.5, name: Number.NaN }, undefined],
      [{ inputs: '2' }, undefined],
    ];
    for (const [priority, retention] of cases) {
      const expected = JSON.stringify(retention ? { p: priority, r: retention } : { p: priority });
      expect(mergeStateText(priority as MergedRun['priority'], retention)).toBe(expected);
    }
  });
});
