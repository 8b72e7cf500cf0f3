import { runBatchSchema, runCreateSchema, runUpdateWithIdSchema } from '@th/contracts';
import { fastRunBatch, fastRunCreate, fastRunUpdateWithId } from './fast-validate';

const ID = '0193A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5B';
const base = {
  id: ID,
  name: 'chain',
  run_type: 'llm',
  start_time: '2026-11-22T04:04:29.623001Z',
  end_time: 1_790_000_000_123,
  trace_id: ID,
  dotted_order: `20261122T040429623001Z${ID}`,
  session_name: 'p',
  inputs: { prompt: 'hi', nested: { a: [1, 2] } },
  outputs: null,
  extra: { metadata: { k: 1 } },
  events: [{ name: 'new_token', time: '2026-11-22T04:04:29.700000Z' }],
  tags: ['a', 'b'],
  trace_tier: 'shortlived',
  child_runs: [],
  unknown_field: 'dropped',
};

/** Variations: each either valid in a common form, or something the fast path must hand to zod. */
const variants: Record<string, unknown>[] = [
  base,
  { name: 'x', run_type: 'chain' },
  { ...base, id: undefined },
  { ...base, name: undefined },
  { ...base, name: 'n'.repeat(1025) },
  { ...base, run_type: '' },
  { ...base, run_type: 'r'.repeat(65) },
  { ...base, run_type: 'agent' },
  { ...base, start_time: '2026-11-22T04:04:29Z' },
  { ...base, start_time: '2026-13-22T04:04:29.623001Z' },
  { ...base, start_time: 'yesterday' },
  // the range checks made on the digits in place, each side of every bound
  { ...base, start_time: '2026-11-22T24:04:29.623001Z' },
  { ...base, start_time: '2026-11-22T23:60:29.623001Z' },
  { ...base, start_time: '2026-11-22T23:59:60.623001Z' },
  { ...base, start_time: '2026-11-22T23:59:59.999999Z' },
  { ...base, start_time: '2026-00-22T04:04:29.623001Z' },
  { ...base, start_time: '2026-12-22T04:04:29.623001Z' },
  { ...base, start_time: '2026-11-00T04:04:29.623001Z' },
  { ...base, start_time: '2026-11-32T04:04:29.623001Z' },
  { ...base, start_time: '2026-01-31T00:00:00.000000Z' },
  // epoch milliseconds: fractions, the epoch, the last millisecond of year 9999 and the first of 10000
  { ...base, end_time: 0 },
  { ...base, end_time: 1_790_000_000_123.5 },
  { ...base, end_time: 253_402_300_799_999 },
  { ...base, end_time: 253_402_300_800_000 },
  { ...base, start_time: -5 },
  { ...base, start_time: null },
  { ...base, end_time: null },
  { ...base, end_time: '2026-11-22 04:04:29.623+02:00' },
  { ...base, inputs: [1, 2] },
  { ...base, inputs: 'text' },
  { ...base, events: [{ a: 1 }, null] },
  { ...base, events: [[1]] },
  { ...base, tags: ['a', 3] },
  { ...base, tags: null },
  { ...base, trace_id: 'not-a-uuid' },
  { ...base, trace_id: null },
  { ...base, parent_run_id: ID.toLowerCase() },
  { ...base, session_id: 42 },
  { ...base, trace_tier: 'forever' },
  { ...base, error: 'boom', revision_id: 'r1', address: 'addr', reference_example_id: ID },
  { ...base, error: { message: 'boom' } },
  { ...base, child_runs: {} },
  { ...base, dotted_order: 'd'.repeat(65537) },
  { ...base, session_name: 's'.repeat(1025) },
  { ...base, id: 'zz' },
  JSON.parse('{"name":"x","run_type":"chain","inputs":{"__proto__":{"a":1}}}') as Record<string, unknown>,
];

function zodResult(schema: { safeParse(v: unknown): { success: boolean; data?: unknown } }, v: unknown): unknown {
  const r = schema.safeParse(v);
  return r.success ? r.data : null;
}

describe('fast run validation', () => {
  it('accepts the SDK shape without zod and returns what zod returns', () => {
    const fast = fastRunCreate(base);
    expect(fast).not.toBeNull();
    expect(fast).toEqual(zodResult(runCreateSchema, base));
    expect(Object.keys(fast!)).toEqual(Object.keys(zodResult(runCreateSchema, base) as object));
    expect(fast!.id).toBe(ID.toLowerCase());
    expect(fast!.end_time).toBe('2026-09-21T14:13:20.123000Z');
    expect('unknown_field' in fast!).toBe(false);
  });

  it.each(variants.map((v, i) => [i, v]))('variant %i: the fast path never accepts what zod rejects and agrees when it accepts', (_i, v) => {
    for (const [fast, schema] of [
      [fastRunCreate, runCreateSchema],
      [fastRunUpdateWithId, runUpdateWithIdSchema],
    ] as const) {
      const f = fast(v);
      const z = zodResult(schema, v);
      if (f !== null) expect(f).toEqual(z);
      if (z === null) expect(f).toBeNull();
    }
  });

  it('covers the common valid shapes (fallback is for errors and rare forms)', () => {
    expect(fastRunCreate({ name: 'x', run_type: 'chain' })).toEqual({ name: 'x', run_type: 'chain' });
    expect(fastRunUpdateWithId({ id: ID, end_time: null, outputs: { a: 1 } })).toEqual({ id: ID.toLowerCase(), end_time: null, outputs: { a: 1 } });
    expect(fastRunUpdateWithId({ end_time: 5 })).toBeNull(); // a batch patch needs its id
  });

  it('batches: same result as runBatchSchema, null (zod) for anything it does not vouch for', () => {
    const batches: unknown[] = [
      { post: [base], patch: [{ id: ID, end_time: 1 }] },
      { post: [base] },
      {},
      { post: null },
      { post: [base, { name: 'x' }] },
      { patch: [{ end_time: 1 }] },
      [],
      'x',
      { post: {}, patch: [] },
    ];
    for (const b of batches) {
      const f = fastRunBatch(b);
      const z = zodResult(runBatchSchema, b);
      if (f !== null) expect(f).toEqual(z);
      if (z === null) expect(f).toBeNull();
    }
    expect(fastRunBatch({})).toEqual({ post: [], patch: [] });
    expect(fastRunBatch({ post: [base], patch: [{ id: ID, end_time: 1 }] })).not.toBeNull();
  });
});
