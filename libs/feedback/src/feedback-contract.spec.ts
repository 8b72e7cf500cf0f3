import {
  feedbackConfigProblems,
  feedbackCreateSchema,
  feedbackEventFromCreate,
  feedbackFromEvent,
  feedbackUpdateSchema,
  rollupFeedbackStats,
} from '@th/contracts';
import { displayValue, feedbackRowJson } from './feedback-row';

const RUN = '0193f4a2-1111-7000-8000-000000000001';
const cats = { type: 'categorical' as const, categories: [{ value: 1, label: 'good' }, { value: 0, label: 'bad' }] };

describe('feedback contract', () => {
  it('takes the SDK camelCase feedbackConfig, booleans as scores and drops unknown keys', () => {
    const f = feedbackCreateSchema.parse({ run_id: RUN, key: 'k', score: false, feedbackConfig: cats, value: 'bad', address: 'x', extend_trace_retention: true });
    expect(f.feedback_config).toEqual(cats);
    expect(f.score).toBe(0);
    expect('address' in f).toBe(false);
    expect('feedbackConfig' in f).toBe(false);
  });

  it('prefers feedback_config over feedbackConfig when both are sent', () => {
    const f = feedbackCreateSchema.parse({ run_id: RUN, key: 'k', feedback_config: { type: 'freeform' }, feedbackConfig: cats });
    expect(f.feedback_config).toEqual({ type: 'freeform' });
  });

  it.each([
    [{ score: 0.5, feedback_config: { type: 'continuous', min: 0, max: 1 } }, []],
    [{ score: 0, feedback_config: { type: 'continuous', min: 0, max: 1 } }, []],
    [{ score: 1, feedback_config: { type: 'continuous', min: 0, max: 1 } }, []],
    [{ score: 1.01, feedback_config: { type: 'continuous', min: 0, max: 1 } }, [['score']]],
    [{ score: -0.01, feedback_config: { type: 'continuous', min: 0 } }, [['score']]],
    [{ score: 1e9, feedback_config: { type: 'continuous' } }, []],
    [{ score: 1, value: 'good', feedback_config: cats }, []],
    [{ value: '0', feedback_config: cats }, []],
    [{ value: 'meh', feedback_config: cats }, [['value']]],
    [{ value: { nested: true }, feedback_config: cats }, [['value']]],
    [{ score: 2, feedback_config: cats }, [['score']]],
    [{ score: 1, feedback_config: { type: 'categorical', categories: [] } }, [['feedback_config']]],
    [{ score: 1, feedback_config: { type: 'continuous', min: 3, max: 1 } }, [['feedback_config']]],
    [{ score: 123, value: 'anything', feedback_config: { type: 'freeform' } }, []],
  ] as const)('config check %#', (f, locs) => {
    expect(feedbackConfigProblems(f as Parameters<typeof feedbackConfigProblems>[0]).map((p) => p.loc)).toEqual(locs);
    const parsed = feedbackCreateSchema.safeParse({ run_id: RUN, key: 'k', ...f });
    expect(parsed.success).toBe(locs.length === 0);
  });

  it('rejects feedback without a run or a project, and wrong types', () => {
    expect(feedbackCreateSchema.safeParse({ key: 'k' }).success).toBe(false);
    expect(feedbackCreateSchema.safeParse({ session_id: RUN, run_id: null, key: 'k' }).success).toBe(true);
    expect(feedbackCreateSchema.safeParse({ run_id: RUN, key: 'k', score: '1' }).success).toBe(false);
    expect(feedbackCreateSchema.safeParse({ run_id: RUN, key: 'k', comment: 5 }).success).toBe(false);
    expect(feedbackCreateSchema.safeParse({ run_id: RUN, key: 'k', feedback_config: { type: 'stars' } }).success).toBe(false);
  });

  it('update: absent stays absent, null clears, camelCase config accepted', () => {
    expect(feedbackUpdateSchema.parse({ score: 1 })).toEqual({ score: 1 });
    expect(feedbackUpdateSchema.parse({ comment: null })).toEqual({ comment: null });
    expect(feedbackUpdateSchema.parse({ feedbackConfig: cats })).toEqual({ feedback_config: cats });
  });

  it('event and API object round-trip every field; the row keeps a display value for filters', () => {
    const create = feedbackCreateSchema.parse({
      id: 'AAAAAAAA-0000-4000-8000-000000000001',
      run_id: RUN,
      key: 'k',
      score: 1,
      value: { label: 'x' },
      comment: 'c',
      correction: 'fixed',
      feedback_source: { type: 'model', metadata: { __run: { run_id: RUN } } },
      feedback_config: { type: 'freeform' },
      created_at: 1_700_000_000_000,
    });
    const e = feedbackEventFromCreate('t', { ...create, id: create.id! }, 7, 1_800_000_000_000_000);
    expect(e).toMatchObject({ id: 'aaaaaaaa-0000-4000-8000-000000000001', version: 7, created_at: '2023-11-14T22:13:20.000000Z', modified_at: '2023-11-14T22:13:20.000000Z' });
    expect(feedbackFromEvent(e)).toMatchObject({ value: { label: 'x' }, correction: 'fixed', feedback_source: { type: 'model' }, feedback_config: { type: 'freeform' }, trace_id: null });
    // The values the texts were made from give the same object as the texts parsed back.
    expect(feedbackFromEvent(e, { value: create.value, correction: create.correction })).toEqual(feedbackFromEvent(e));
    const unset = feedbackEventFromCreate('t', { ...create, id: create.id!, value: undefined, correction: undefined }, 8, 1_800_000_000_000_000);
    expect(feedbackFromEvent(unset, { value: undefined, correction: undefined })).toEqual(feedbackFromEvent(unset));
    const row = JSON.parse(feedbackRowJson(e)) as Record<string, unknown>;
    expect(row).toMatchObject({ value: '{"label":"x"}', source_type: 'model', created_at: '2023-11-14 22:13:20.000000', is_deleted: 0 });
    expect(displayValue('"plain"')).toBe('plain');
    expect(displayValue(null)).toBe('');
    expect(displayValue('true')).toBe('true');
  });

  it('rolls grouped counts up to n/avg/stdev/values per key', () => {
    expect(rollupFeedbackStats([])).toBeNull();
    const s = rollupFeedbackStats([
      { key: 'a', value: 'good', n: 2, scored: 2, sum: 2, sum_sq: 2 },
      { key: 'a', value: 'bad', n: 1, scored: 1, sum: 0, sum_sq: 0 },
      { key: 'b', value: '', n: 1, scored: 0, sum: null, sum_sq: null },
    ]);
    expect(s?.a).toMatchObject({ n: 3, count: 3, values: { good: 2, bad: 1 } });
    expect(s?.a.avg).toBeCloseTo(2 / 3, 12);
    expect(s?.a.stdev).toBeCloseTo(Math.sqrt(2 / 9), 12);
    expect(s?.b).toEqual({ n: 1, count: 1, avg: null, mean: null, stdev: null, values: {} });
  });
});
