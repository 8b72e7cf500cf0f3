import type { RunEvent } from '@th/contracts';
import { emptyRun, mergeEvent } from './run-merge';
import { locatorRowJson, runRowJson } from './run-row';

const T = '11111111-1111-4111-8111-111111111111';
const ID = '22222222-2222-4222-8222-222222222222';
const ev = (op: 'post' | 'patch', fields: RunEvent['fields']): RunEvent => ({ kind: 'run', op, tenant_id: T, id: ID, received_at: '2026-11-22T04:04:29.623001Z', fields });

describe('run row text kept between writes', () => {
  it('a field an event changes is serialized again; an untouched one keeps its text', () => {
    const run = emptyRun(T, ID);
    mergeEvent(run, ev('post', { name: 'n', run_type: 'chain', start_time: '2026-11-22T04:04:29.623001Z', inputs: { q: 'a"b' }, outputs: { v: 1 } }));
    // Objects go into the row as their JSON text (read into the String column as text, RUN_ROW_INSERT_SETTINGS).
    const first = JSON.parse(runRowJson(run, 1, '2026-11-22T04:04:29.623001Z').line) as Record<string, unknown>;
    expect(first.inputs).toEqual({ q: 'a"b' });
    expect(first.outputs).toEqual({ v: 1 });
    expect(first.events).toBe('');
    expect(run.text?.inputs).toBe(JSON.stringify({ q: 'a"b' }));

    mergeEvent(run, ev('patch', { outputs: { v: 2 }, end_time: '2026-11-22T04:04:30.000000Z' }));
    expect(run.text?.outputs).toBeUndefined();
    const second = JSON.parse(runRowJson(run, 2, '2026-11-22T04:04:29.623001Z').line) as Record<string, unknown>;
    expect(second.outputs).toEqual({ v: 2 });
    expect(second.inputs).toEqual({ q: 'a"b' });
    expect(second.status).toBe('success');

    // The same bytes as a run serialized from scratch.
    const fresh = emptyRun(T, ID);
    mergeEvent(fresh, ev('post', { name: 'n', run_type: 'chain', start_time: '2026-11-22T04:04:29.623001Z', inputs: { q: 'a"b' }, outputs: { v: 1 } }));
    mergeEvent(fresh, ev('patch', { outputs: { v: 2 }, end_time: '2026-11-22T04:04:30.000000Z' }));
    expect(runRowJson(fresh, 2, '2026-11-22T04:04:29.623001Z').line).toBe(runRowJson(run, 2, '2026-11-22T04:04:29.623001Z').line);
  });
});

describe('run row fields that are not objects', () => {
  it('keeps a string or number input as a JSON string literal of its JSON text', () => {
    const run = emptyRun(T, ID);
    mergeEvent(run, ev('post', { name: 'n', run_type: 'chain', start_time: '2026-11-22T04:04:29.623001Z', inputs: 'plain "text"' as never, outputs: 42 as never }));
    const row = JSON.parse(runRowJson(run, 1, '2026-11-22T04:04:29.623001Z').line) as Record<string, unknown>;
    expect(row.inputs).toBe(JSON.stringify('plain "text"'));
    expect(row.outputs).toBe('42');
    expect(row.llm).toBe('');
    expect(row.merge_state).toEqual({ p: run.priority });
  });
});

describe('locator row', () => {
  it('is the JSON of the locator object, live and deleted', () => {
    const key = `${ID}|2026-11-22 04:04:29.623001`;
    expect(JSON.parse(locatorRowJson(T, ID, key, { trace_id: T, dotted_order: 'a"b' }, 1_790_000_000_000_001))).toEqual({
      tenant_id: T,
      id: ID,
      session_id: ID,
      start_time: '2026-11-22 04:04:29.623001',
      trace_id: T,
      dotted_order: 'a"b',
      version: 1_790_000_000_000_001,
      is_deleted: 0,
    });
    expect(locatorRowJson(T, ID, key, null, 7)).toBe(
      JSON.stringify({ tenant_id: T, id: ID, session_id: ID, start_time: '2026-11-22 04:04:29.623001', trace_id: ID, dotted_order: '', version: 7, is_deleted: 1 }),
    );
  });
});
