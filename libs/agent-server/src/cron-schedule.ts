/**
 * Standard 5-field cron expressions (minute hour day-of-month month day-of-week), evaluated in UTC:
 * `*`, lists, ranges, steps, month and weekday names, 0 or 7 for Sunday, and the @hourly/@daily/...
 * shorthands. As in Vixie cron, when both day fields are restricted a day matches either of them.
 */
export interface CronSchedule {
  minutes: ReadonlySet<number>;
  hours: ReadonlySet<number>;
  days: ReadonlySet<number>;
  months: ReadonlySet<number>;
  weekdays: ReadonlySet<number>;
  /** Day-of-month and day-of-week both restricted (neither starts with `*`): a day matches either. */
  eitherDay: boolean;
}

/** An expression that is not a valid schedule; the message says which field and why. */
export class CronScheduleError extends Error {
  override readonly name = 'CronScheduleError';
}

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
}

const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'] as const;
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] as const;

const FIELDS: readonly FieldSpec[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTH_NAMES },
  // 7 is Sunday too; folded to 0 once parsed
  { name: 'day of week', min: 0, max: 7, names: DAY_NAMES },
];

const SHORTHANDS: Readonly<Record<string, string>> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

/** Days searched for the next match: 8 years covers a 29 February that skips a century year. */
const SEARCH_DAYS = 366 * 8 + 2;

function value(text: string, f: FieldSpec): number {
  const named = f.names ? f.names.indexOf(text.toUpperCase()) : -1;
  if (named >= 0) return named + (f.name === 'month' ? 1 : 0);
  if (!/^\d+$/.test(text)) throw new CronScheduleError(`${f.name}: "${text}" is not a number${f.names ? ' or a name' : ''}`);
  const n = Number(text);
  if (n < f.min || n > f.max) throw new CronScheduleError(`${f.name}: ${n} is outside ${f.min}-${f.max}`);
  return n;
}

function field(text: string, f: FieldSpec): Set<number> {
  const out = new Set<number>();
  for (const item of text.split(',')) {
    const [range, stepText, ...rest] = item.split('/');
    if (range === undefined || range === '' || rest.length) throw new CronScheduleError(`${f.name}: "${item}" is not a value, range or step`);
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d+$/.test(stepText) || Number(stepText) < 1) throw new CronScheduleError(`${f.name}: step "${stepText}" must be a whole number of at least 1`);
      step = Number(stepText);
    }
    let lo: number;
    let hi: number;
    if (range === '*') [lo, hi] = [f.min, f.max];
    else if (range.includes('-')) {
      const [a, b, ...more] = range.split('-');
      if (a === undefined || b === undefined || more.length) throw new CronScheduleError(`${f.name}: "${range}" is not a range`);
      [lo, hi] = [value(a, f), value(b, f)];
      if (lo > hi) throw new CronScheduleError(`${f.name}: range "${range}" runs backwards`);
    } else {
      lo = value(range, f);
      // "5/15": from 5 to the end of the field, every 15
      hi = stepText === undefined ? lo : f.max;
    }
    for (let v = lo; v <= hi; v += step) out.add(v);
  }
  return out;
}

/** Parses a schedule; throws CronScheduleError when it is malformed or can never fire. */
export function parseCronSchedule(expression: string): CronSchedule {
  const trimmed = expression.trim();
  const text = SHORTHANDS[trimmed.toLowerCase()] ?? trimmed;
  const parts = text.split(/\s+/).filter((p) => p !== '');
  if (parts.length !== 5) throw new CronScheduleError(`expected 5 fields (minute hour day-of-month month day-of-week), got ${parts.length}`);
  const [minutes, hours, days, months, weekdays] = parts.map((p, i) => field(p, FIELDS[i]!)) as [Set<number>, Set<number>, Set<number>, Set<number>, Set<number>];
  if (weekdays.delete(7)) weekdays.add(0);
  const schedule: CronSchedule = { minutes, hours, days, months, weekdays, eitherDay: !parts[2]!.startsWith('*') && !parts[4]!.startsWith('*') };
  if (nextCronTime(schedule, new Date(Date.UTC(2000, 0, 1))) === null) throw new CronScheduleError(`"${expression}" never matches a date`);
  return schedule;
}

function dayMatches(s: CronSchedule, day: Date): boolean {
  if (!s.months.has(day.getUTCMonth() + 1)) return false;
  const dom = s.days.has(day.getUTCDate());
  const dow = s.weekdays.has(day.getUTCDay());
  return s.eitherDay ? dom || dow : dom && dow;
}

/** The first matching minute strictly after `after` (UTC), or null when none comes within 8 years. */
export function nextCronTime(s: CronSchedule, after: Date): Date | null {
  const start = new Date(Math.floor(after.getTime() / 60_000) * 60_000 + 60_000);
  const [y, mo, d] = [start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate()];
  for (let i = 0; i < SEARCH_DAYS; i++) {
    const day = new Date(Date.UTC(y, mo, d + i));
    if (!dayMatches(s, day)) continue;
    const first = i === 0;
    for (let h = first ? start.getUTCHours() : 0; h < 24; h++) {
      if (!s.hours.has(h)) continue;
      for (let m = first && h === start.getUTCHours() ? start.getUTCMinutes() : 0; m < 60; m++) {
        if (s.minutes.has(m)) return new Date(Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate(), h, m));
      }
    }
  }
  return null;
}
