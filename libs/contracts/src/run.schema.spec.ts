import { RUN_QUERY_MAX_LIMIT, RUN_QUERY_TREE_MAX_LIMIT, isLightRunField, runQuerySchema } from './run.schema';

const TRACE = '0190a1b2-0000-7000-8000-000000000001';

describe('run query limit', () => {
  it('takes up to 1,000 runs for any query', () => {
    expect(runQuerySchema.parse({ limit: RUN_QUERY_MAX_LIMIT }).limit).toBe(1_000);
  });

  it("takes up to 10,000 for one trace's light fields (a tree in one read)", () => {
    expect(runQuerySchema.parse({ trace: TRACE, select: ['id', 'name', 'dotted_order', 'start_time', 'latency'], limit: RUN_QUERY_TREE_MAX_LIMIT }).limit).toBe(10_000);
  });

  it.each([
    ['no trace', { select: ['id'], limit: 1_001 }],
    ['no select', { trace: TRACE, limit: 1_001 }],
    ['inputs selected', { trace: TRACE, select: ['id', 'inputs'], limit: 1_001 }],
    ['error selected', { trace: TRACE, select: ['error'], limit: 1_001 }],
    ['past 10,000', { trace: TRACE, select: ['id'], limit: 10_001 }],
  ])('refuses a larger page with %s, at limit', (_, body) => {
    const r = runQuerySchema.safeParse(body);
    expect(r.success).toBe(false);
    expect(r.error?.issues.map((i) => i.path.join('.'))).toEqual(['limit']);
  });

  it('counts JSON documents and the error text as heavy, scalars and ids as light', () => {
    expect(['inputs', 'outputs', 'extra', 'events', 'serialized', 'llm', 'feedback_stats', 'error'].filter((f) => isLightRunField(f as never))).toEqual([]);
    expect(['id', 'name', 'dotted_order', 'tags', 'latency', 'total_tokens'].every((f) => isLightRunField(f as never))).toBe(true);
  });
});
