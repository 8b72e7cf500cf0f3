import type { RunEvent } from '@th/contracts';
import { computeRun, dottedSegment, emptyRun, mergeEvent, parseDottedOrder } from './run-merge';
import { mergedFromRow, RUN_ROW_COLUMNS, rowObject, runRow, type StoredRunRow } from './run-row';

const T = 'a0000000-0000-4000-8000-000000000000';
const ID = '01a2016d-4b52-7000-8000-000000000001';
const ev = (op: 'post' | 'patch', fields: RunEvent['fields']): RunEvent => ({ kind: 'run', op, tenant_id: T, id: ID, received_at: '2026-11-22T00:00:00.000000Z', fields });

const post = ev('post', { name: 'n', run_type: 'llm', start_time: '2026-11-22T04:04:29.623001Z', inputs: { a: 1 }, extra: { metadata: { k: 'v' } }, session_id: T });
const patch1 = ev('patch', { end_time: '2026-11-22T04:04:30.000000Z', outputs: { b: 2 }, name: 'n' });
const patch2 = ev('patch', { error: 'boom', end_time: '2026-11-22T04:04:31.000000Z' });
const dupPost = ev('post', { name: 'other', run_type: 'llm', start_time: '2026-11-22T04:04:29.623001Z', inputs: { a: 9 } });

function permutations<T>(xs: T[]): T[][] {
  if (xs.length <= 1) return [xs];
  return xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((p) => [x, ...p]));
}

describe('run merge', () => {
  it('gives the same run in every arrival order, with duplicates', () => {
    const results = permutations([post, patch1, patch2, dupPost, patch1]).map((order) => {
      const run = emptyRun(T, ID);
      for (const e of order) mergeEvent(run, e);
      return JSON.stringify([run.fields, run.priority, computeRun(run, post.received_at)], Object.keys(run.fields).sort());
    });
    expect(new Set(results).size).toBe(1);
  });

  it('lets the post own creation fields and the patch own completion fields', () => {
    const run = emptyRun(T, ID);
    for (const e of [patch1, post, patch2]) mergeEvent(run, e);
    expect(run.fields.inputs).toEqual({ a: 1 });
    expect(run.fields.outputs).toEqual({ b: 2 });
    expect(run.fields.end_time).toBe('2026-11-22T04:04:31.000000Z'); // the later of two patches
    expect(computeRun(run, post.received_at).status).toBe('error');
  });

  it('is idempotent: merging an event again changes nothing', () => {
    const run = emptyRun(T, ID);
    mergeEvent(run, post);
    mergeEvent(run, patch1);
    expect(mergeEvent(run, patch1)).toBe(false);
    expect(mergeEvent(run, post)).toBe(false);
  });

  it('survives a round trip through the stored row', () => {
    const run = emptyRun(T, ID);
    for (const e of [post, patch1]) mergeEvent(run, e);
    const { line } = runRow(run, 5, post.received_at);
    // What ClickHouse returns: JSON objects of the row (read into String columns) come back as their text.
    const row = Object.fromEntries(Object.entries(rowObject(RUN_ROW_COLUMNS, line)).map(([k, v]) => [k, v !== null && typeof v === 'object' && k !== 'tags' && k !== 'parent_run_ids' && k !== 'metadata' ? JSON.stringify(v) : v]));
    const stored = {
      ...row,
      start_time: '2026-11-22T04:04:29.623001Z',
      end_time: '2026-11-22T04:04:30.000000Z',
    } as unknown as StoredRunRow;
    const back = mergedFromRow(stored);
    expect(back.fields).toEqual(run.fields);
    expect(back.priority).toEqual(run.priority);
    // and merging the remaining event into the reloaded state equals merging it into the original
    mergeEvent(back, patch2);
    mergeEvent(run, patch2);
    expect(back.fields).toEqual(run.fields);
  });

  it('derives trace, parents and order from dotted_order', () => {
    const root = '01a2016d-4b52-7000-8000-00000000000a';
    const order = `${dottedSegment('2026-11-22T04:04:29.623001Z', root)}.${dottedSegment('2026-11-22T04:04:29.650002Z', ID)}`;
    expect(order).toBe(`20261122T040429623001Z${root}.20261122T040429650002Z${ID}`);
    expect(parseDottedOrder(order)?.ids).toEqual([root, ID]);
    const run = emptyRun(T, ID);
    mergeEvent(run, ev('post', { name: 'c', run_type: 'tool', dotted_order: order }));
    const c = computeRun(run, post.received_at);
    expect(c).toMatchObject({ trace_id: root, parent_run_id: root, parent_run_ids: [root], is_root: false, start_time: '2026-11-22T04:04:29.650002Z' });
    expect(parseDottedOrder('garbage')).toBeNull();
  });
});
