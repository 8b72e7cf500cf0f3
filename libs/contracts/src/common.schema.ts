import { z } from 'zod';

/** A UUID in any version (the SDK sends v7, the spec shows v4). */
export const uuid = z
  .string()
  .regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/, 'Input should be a valid UUID')
  .transform((s) => s.toLowerCase());

const ISO_RE = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?$/;

/**
 * The years a timestamp may name: ClickHouse's DateTime64 range (runs, feedback and prices are kept there;
 * PostgreSQL's range is wider). Outside it the engine would store another instant, so such values are refused.
 */
export const TIMESTAMP_YEARS = { min: 1900, max: 2299 } as const;
const MIN_MICROS = Date.UTC(TIMESTAMP_YEARS.min, 0, 1) * 1000;
// Exclusive: past 2^53 microseconds a difference of 1 is below a double's precision.
const END_MICROS = Date.UTC(TIMESTAMP_YEARS.max + 1, 0, 1) * 1000;

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  // 31 days in months 1, 3, 5, 7, 8, 10 and 12.
  return 30 + ((month + (month >> 3)) & 1);
}

/**
 * True when the fields name a real moment of the calendar (the day within its month, leap years counted;
 * hour up to 23, minute and second up to 59) in TIMESTAMP_YEARS. Arithmetic only: it runs for every run ingested.
 */
export function isCalendarDateTime(year: number, month: number, day: number, hour: number, minute: number, second: number): boolean {
  if (year < TIMESTAMP_YEARS.min || year > TIMESTAMP_YEARS.max || month < 1 || month > 12 || day < 1) return false;
  return day <= daysInMonth(year, month) && hour <= 23 && minute <= 59 && second <= 59;
}

/**
 * Parses an ISO-8601 string (timezone optional, read as UTC) or an epoch-milliseconds number
 * into microseconds since the epoch. Returns null when the value is not a moment of the calendar
 * within TIMESTAMP_YEARS (2024-02-30, 25:00 and year 0 are refused, not rolled over).
 */
export function toEpochMicros(value: string | number): number | null {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) return null;
    const micros = Math.round(value * 1000);
    return micros < END_MICROS ? micros : null;
  }
  if (isCanonicalIsoInRange(value)) {
    // The hot path: the SDK's and our own form, 2026-11-22T04:04:29.623001Z.
    // Digits read in place (the characters were checked above): no substrings to allocate and parse.
    const d2 = (i: number): number => (value.charCodeAt(i) - 48) * 10 + value.charCodeAt(i + 1) - 48;
    const base = Date.UTC(d2(0) * 100 + d2(2), d2(5) - 1, d2(8), d2(11), d2(14), d2(17));
    return base * 1000 + d2(20) * 10_000 + d2(22) * 100 + d2(24);
  }
  const m = ISO_RE.exec(value.trim());
  if (!m) return null;
  const [, y, mo, d, h, mi, s = '0', frac = '', tz = 'Z'] = m;
  if (!isCalendarDateTime(+y, +mo, +d, +h, +mi, +s)) return null;
  // Date.UTC reads years 0-99 as 1900-1999; the range check above keeps them out.
  const base = Date.UTC(+y, +mo - 1, +d, +h, +mi, +s);
  let offsetMin = 0;
  if (tz !== 'Z') {
    const sign = tz.startsWith('-') ? -1 : 1;
    const digits = tz.slice(1).replace(':', '');
    const hours = Number(digits.slice(0, 2));
    const minutes = Number(digits.slice(2, 4));
    if (hours > 23 || minutes > 59) return null;
    offsetMin = sign * (hours * 60 + minutes);
  }
  const micros = (base - offsetMin * 60_000) * 1000 + Number((frac + '000000').slice(0, 6));
  return micros >= MIN_MICROS && micros < END_MICROS ? micros : null;
}

/** True for YYYY-MM-DDTHH:MM:SS.ffffffZ exactly (checked by character, no regex). */
export function isCanonicalIso(v: string): boolean {
  if (v.length !== 27 || v.charCodeAt(26) !== 90 /* Z */ || v.charCodeAt(10) !== 84 /* T */ || v.charCodeAt(19) !== 46 /* . */) return false;
  for (let i = 0; i < 26; i++) {
    if (i === 4 || i === 7 || i === 10 || i === 13 || i === 16 || i === 19) continue;
    const c = v.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return v.charCodeAt(4) === 45 && v.charCodeAt(7) === 45 && v.charCodeAt(13) === 58 && v.charCodeAt(16) === 58;
}

/**
 * True for a canonical ISO timestamp (see isCanonicalIso) that is a moment of the calendar (see
 * isCalendarDateTime): what the timestamp schema passes through as it is. Digits read in place (no substrings).
 */
export function isCanonicalIsoInRange(v: string): boolean {
  if (!isCanonicalIso(v)) return false;
  const d2 = (i: number): number => (v.charCodeAt(i) - 48) * 10 + v.charCodeAt(i + 1) - 48;
  return isCalendarDateTime(d2(0) * 100 + d2(2), d2(5), d2(8), d2(11), d2(14), d2(17));
}

const pad2 = (n: number): string => (n < 10 ? `0${n}` : `${n}`);

/**
 * Formats epoch microseconds as an ISO string with six fractional digits and a Z.
 *
 * Instants from 1970 to 2255 (whole microseconds within Number's safe integers: every timestamp
 * ingest meets) are formatted with integer arithmetic, the civil date from the day number (the
 * inverse of Howard Hinnant's days_from_civil): about half the time of Date#toISOString plus the
 * slicing, on the path of every run whose end_time the SDK sends as epoch milliseconds. Other values
 * go through Date, as before.
 */
export function microsToIso(micros: number): string {
  if (Number.isSafeInteger(micros) && micros >= 0) {
    const ms = Math.floor(micros / 1000);
    const days = Math.floor(ms / 86_400_000);
    let rest = ms - days * 86_400_000;
    const z = days + 719_468;
    const era = Math.floor(z / 146_097);
    const doe = z - era * 146_097;
    const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
    const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
    const mp = Math.floor((5 * doy + 2) / 153);
    const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
    const month = mp < 10 ? mp + 3 : mp - 9;
    const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
    const hours = Math.floor(rest / 3_600_000);
    rest -= hours * 3_600_000;
    const minutes = Math.floor(rest / 60_000);
    rest -= minutes * 60_000;
    const seconds = Math.floor(rest / 1000);
    const fraction = (rest - seconds * 1000) * 1000 + (micros - ms * 1000);
    return `${year}-${pad2(month)}-${pad2(day)}T${pad2(hours)}:${pad2(minutes)}:${pad2(seconds)}.${String(fraction + 1_000_000).slice(1)}Z`;
  }
  const ms = Math.floor(micros / 1000);
  const iso = new Date(ms).toISOString(); // 2026-11-22T04:04:29.623Z
  const sub = String(micros - ms * 1000).padStart(3, '0');
  return `${iso.slice(0, 23)}${sub}Z`;
}

/** A timestamp as the SDK sends it (ISO string or epoch ms), normalized to an ISO string with microseconds. */
export const timestamp = z.union([z.string(), z.number()]).transform((v, ctx) => {
  if (typeof v === 'string' && isCanonicalIsoInRange(v)) return v;
  const micros = toEpochMicros(v);
  if (micros === null) {
    ctx.addIssue({ code: 'custom', message: `Input should be a valid datetime of the calendar, in the years ${TIMESTAMP_YEARS.min} to ${TIMESTAMP_YEARS.max}` });
    return z.NEVER;
  }
  return microsToIso(micros);
});

/**
 * An ISO 8601 date-time with a time zone (kept as sent), refused unless it is a moment of the calendar in
 * TIMESTAMP_YEARS: zod's own check lets 0000-01-01 or 2024-02-30 through to the database.
 */
export const zonedDateTime = (error?: string) =>
  z.iso.datetime({ offset: true, ...(error === undefined ? {} : { error }) }).refine((v) => toEpochMicros(v) !== null, {
    error: `must be a date-time of the calendar, in the years ${TIMESTAMP_YEARS.min} to ${TIMESTAMP_YEARS.max}`,
  });

/**
 * The words a boolean query parameter (or setting) may be written as, in any letter case: what the published
 * API's parser (pydantic) reads, so Python's `True`/`False` (str(bool)), JS's `true`, `1` and `0` all work.
 */
const TRUE_WORDS = new Set(['true', '1', 'yes', 'y', 'on', 't']);
const FALSE_WORDS = new Set(['false', '0', 'no', 'n', 'off', 'f']);

/** The boolean a query-string word means, or undefined when it is none of the words above. */
export function parseBooleanWord(word: string): boolean | undefined {
  const w = word.trim().toLowerCase();
  if (TRUE_WORDS.has(w)) return true;
  if (FALSE_WORDS.has(w)) return false;
  return undefined;
}

/** A boolean query parameter (a JSON boolean is taken too, for bodies that share a schema with a query). */
export const queryBool = z.union([z.boolean(), z.string()]).transform((v, ctx) => {
  if (typeof v === 'boolean') return v;
  const b = parseBooleanWord(v);
  if (b === undefined) {
    ctx.addIssue({ code: 'custom', message: 'Input should be a valid boolean (true, false, 1, 0, yes, no, on or off)' });
    return z.NEVER;
  }
  return b;
});

export const jsonObject = z.record(z.string(), z.unknown());

/** A query parameter that may repeat (`?k=a&k=b`): one value or several, always answered as an array. */
export const queryArray = <T extends z.ZodTypeAny>(t: T) => z.union([t, z.array(t)]).transform((v) => (Array.isArray(v) ? v : [v]) as z.infer<T>[]);

export const validationErrorSchema = z.object({
  loc: z.array(z.union([z.string(), z.number()])),
  msg: z.string(),
  type: z.string(),
  /** Pydantic's error context; a filter's syntax error carries its 0-based character `position`. */
  ctx: z.record(z.string(), z.unknown()).optional(),
});
export const httpValidationErrorSchema = z.object({ detail: z.array(validationErrorSchema) });
export type ValidationErrorItem = z.infer<typeof validationErrorSchema>;

export const errorBodySchema = z.object({ detail: z.string() });
