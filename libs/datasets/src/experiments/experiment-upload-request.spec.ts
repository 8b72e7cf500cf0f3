import { randomUUID } from 'node:crypto';
import { experimentUploadRequestSchema } from '@th/contracts';
import { EventLoopPacer, parseOrThrow, parseOrThrowPaced, ValidationFailed } from '@th/platform';

/** What a parse answers: the data, or the 422 items. */
async function outcome(f: () => unknown): Promise<{ data?: unknown; errors?: unknown }> {
  try {
    return { data: await f() };
  } catch (err) {
    if (err instanceof ValidationFailed) return { errors: err.details };
    throw err;
  }
}

describe('upload-experiment bodies parsed a row at a time', () => {
  const start = '2024-05-01T10:00:00Z';
  const end = '2024-05-01T11:00:00Z';
  const row = (i: number) => ({
    row_id: randomUUID(),
    inputs: { q: `question ${i}` },
    expected_outputs: { a: i },
    actual_outputs: { a: i },
    evaluation_scores: i % 50 === 0 ? [{ key: 'correct', score: true }] : undefined,
    start_time: '2024-05-01T10:30:00.5+00:00',
    end_time: '2024-05-01T10:31:00Z',
    run_name: 'r',
  });
  const rows = Array.from({ length: 700 }, (_, i) => row(i));
  const body = { experiment_name: 'e', dataset_name: 'd', experiment_start_time: start, experiment_end_time: end, results: rows };

  it('gives what the whole parse gives: data, issues and their order (the spec rules included)', async () => {
    const cases: unknown[] = [
      body,
      { ...body, dataset_name: undefined }, // rule 2
      { ...body, experiment_name: '' }, // a check issue: the rules still run
      { ...body, experiment_end_time: '2024-05-01T10:00:30Z' }, // rule 1 on every row
      { ...body, experiment_end_time: '2024-04-01T10:00:00Z' }, // end before start
      { ...body, results: rows.map((r, i) => (i === 5 ? { ...r, row_id: rows[0].row_id } : i === 650 ? { ...r, start_time: '2024-02-30T00:00:00Z', evaluation_scores: [{ key: '' }] } : r)) },
      { ...body, experiment_start_time: ['x'] }, // a type issue: the rules do not run
    ];
    let refused = 0;
    for (const value of cases) {
      const v = JSON.parse(JSON.stringify(value)) as unknown;
      const whole = await outcome(() => parseOrThrow(experimentUploadRequestSchema, v, ['body']));
      if (whole.errors) refused++;
      expect(await outcome(() => parseOrThrowPaced(experimentUploadRequestSchema, v, ['body'], {}, new EventLoopPacer(0)))).toEqual(whole);
    }
    expect(refused).toBe(cases.length - 1);
  });
});
