import { CronScheduleError, nextCronTime, parseCronSchedule } from './cron-schedule';

/** The next firing after `after` (ISO, UTC) of `expr`, as ISO. */
const next = (expr: string, after: string): string | undefined => nextCronTime(parseCronSchedule(expr), new Date(after))?.toISOString();
/** The next `n` firings, each strictly after the one before. */
const series = (expr: string, after: string, n: number): string[] => {
  const s = parseCronSchedule(expr);
  const out: string[] = [];
  let t = new Date(after);
  for (let i = 0; i < n; i++) {
    t = nextCronTime(s, t)!;
    out.push(t.toISOString());
  }
  return out;
};

describe('cron schedule', () => {
  it('fires every minute, strictly after the given time, on whole minutes', () => {
    expect(next('* * * * *', '2024-05-10T12:30:00.000Z')).toBe('2024-05-10T12:31:00.000Z');
    expect(next('* * * * *', '2024-05-10T12:30:59.999Z')).toBe('2024-05-10T12:31:00.000Z');
    expect(next('* * * * *', '2024-05-10T23:59:30.000Z')).toBe('2024-05-11T00:00:00.000Z');
  });

  it('reads ranges, steps and lists, and steps over a range or from a start', () => {
    expect(series('*/15 * * * *', '2024-05-10T12:07:00Z', 4)).toEqual([
      '2024-05-10T12:15:00.000Z',
      '2024-05-10T12:30:00.000Z',
      '2024-05-10T12:45:00.000Z',
      '2024-05-10T13:00:00.000Z',
    ]);
    expect(series('0 9-11 * * *', '2024-05-10T10:30:00Z', 3)).toEqual(['2024-05-10T11:00:00.000Z', '2024-05-11T09:00:00.000Z', '2024-05-11T10:00:00.000Z']);
    expect(series('5,20,40 8 * * *', '2024-05-10T08:20:00Z', 3)).toEqual(['2024-05-10T08:40:00.000Z', '2024-05-11T08:05:00.000Z', '2024-05-11T08:20:00.000Z']);
    expect(series('10-30/10 0 * * *', '2024-05-10T00:00:00Z', 4)).toEqual([
      '2024-05-10T00:10:00.000Z',
      '2024-05-10T00:20:00.000Z',
      '2024-05-10T00:30:00.000Z',
      '2024-05-11T00:10:00.000Z',
    ]);
    expect(series('50/5 3 * * *', '2024-05-10T03:00:00Z', 3)).toEqual(['2024-05-10T03:50:00.000Z', '2024-05-10T03:55:00.000Z', '2024-05-11T03:50:00.000Z']);
    expect(series('0 0,12 1-2,15 * *', '2024-05-01T06:00:00Z', 4)).toEqual([
      '2024-05-01T12:00:00.000Z',
      '2024-05-02T00:00:00.000Z',
      '2024-05-02T12:00:00.000Z',
      '2024-05-15T00:00:00.000Z',
    ]);
  });

  it('accepts month and weekday names in any case, and 0 or 7 for Sunday', () => {
    // 2024-05-10 is a Friday
    expect(next('0 9 * * MON', '2024-05-10T00:00:00Z')).toBe('2024-05-13T09:00:00.000Z');
    expect(next('0 9 * * mon-wed', '2024-05-14T10:00:00Z')).toBe('2024-05-15T09:00:00.000Z');
    expect(next('0 0 * * 7', '2024-05-10T00:00:00Z')).toBe('2024-05-12T00:00:00.000Z');
    expect(next('0 0 * * 0', '2024-05-10T00:00:00Z')).toBe('2024-05-12T00:00:00.000Z');
    expect(next('0 0 * * 5-7', '2024-05-11T00:00:00Z')).toBe('2024-05-12T00:00:00.000Z');
    expect(next('0 0 1 jan,Jul *', '2024-05-10T00:00:00Z')).toBe('2024-07-01T00:00:00.000Z');
    expect(next('0 0 1 AUG-SEP *', '2024-08-01T00:00:00Z')).toBe('2024-09-01T00:00:00.000Z');
  });

  it('matches either day field when both are restricted, both otherwise', () => {
    // the 13th or any Friday: Friday the 10th comes first, then the 13th (a Monday), then Friday the 17th
    expect(series('0 0 13 * FRI', '2024-05-09T00:00:00Z', 3)).toEqual(['2024-05-10T00:00:00.000Z', '2024-05-13T00:00:00.000Z', '2024-05-17T00:00:00.000Z']);
    // day of week alone: the day-of-month star does not widen it
    expect(next('0 0 * * FRI', '2024-05-11T00:00:00Z')).toBe('2024-05-17T00:00:00.000Z');
    // day of month alone: the weekday star does not widen it
    expect(next('0 0 13 * *', '2024-05-11T00:00:00Z')).toBe('2024-05-13T00:00:00.000Z');
    // a stepped star still counts as unrestricted (Vixie cron): both must match
    expect(next('0 0 */2 * MON', '2024-05-01T00:00:00Z')).toBe('2024-05-13T00:00:00.000Z');
  });

  it('rolls over month and year ends, skips short months and finds 29 February', () => {
    expect(next('0 0 1 * *', '2024-12-15T00:00:00Z')).toBe('2025-01-01T00:00:00.000Z');
    expect(next('59 23 31 12 *', '2024-12-31T23:59:00Z')).toBe('2025-12-31T23:59:00.000Z');
    expect(series('0 12 31 * *', '2024-01-31T12:00:00Z', 3)).toEqual(['2024-03-31T12:00:00.000Z', '2024-05-31T12:00:00.000Z', '2024-07-31T12:00:00.000Z']);
    expect(next('0 0 29 2 *', '2024-03-01T00:00:00Z')).toBe('2028-02-29T00:00:00.000Z');
    // 2100 is not a leap year: eight years to the next 29 February
    expect(next('0 0 29 2 *', '2096-03-01T00:00:00Z')).toBe('2104-02-29T00:00:00.000Z');
  });

  it('knows the @ shorthands', () => {
    expect(next('@hourly', '2024-05-10T12:30:00Z')).toBe('2024-05-10T13:00:00.000Z');
    expect(next('@daily', '2024-05-10T12:30:00Z')).toBe('2024-05-11T00:00:00.000Z');
    expect(next('@weekly', '2024-05-10T12:30:00Z')).toBe('2024-05-12T00:00:00.000Z');
    expect(next('@monthly', '2024-05-10T12:30:00Z')).toBe('2024-06-01T00:00:00.000Z');
    expect(next('@yearly', '2024-05-10T12:30:00Z')).toBe('2025-01-01T00:00:00.000Z');
  });

  it.each([
    ['', /5 fields/],
    ['* * * *', /5 fields/],
    ['* * * * * *', /5 fields/],
    ['60 * * * *', /minute: 60 is outside 0-59/],
    ['* 24 * * *', /hour: 24/],
    ['* * 0 * *', /day of month: 0/],
    ['* * 32 * *', /day of month: 32/],
    ['* * * 13 *', /month: 13/],
    ['* * * * 8', /day of week: 8/],
    ['*/0 * * * *', /step "0"/],
    ['*/x * * * *', /step "x"/],
    ['5-1 * * * *', /backwards/],
    ['1-2-3 * * * *', /not a range/],
    ['1,,2 * * * *', /not a value/],
    ['a * * * *', /not a number/],
    ['* * * FOO *', /not a number or a name/],
    ['* * * * MONDAY', /not a number or a name/],
    ['-1 * * * *', /"" is not a number/],
    ['0 0 30 2 *', /never matches/],
    ['0 0 31 4,6,9,11 *', /never matches/],
    ['@every_minute', /5 fields/],
  ])('refuses %j', (expr, message) => {
    expect(() => parseCronSchedule(expr)).toThrow(CronScheduleError);
    expect(() => parseCronSchedule(expr)).toThrow(message);
  });
});
