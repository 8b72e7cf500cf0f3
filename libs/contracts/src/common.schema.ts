import { z } from 'zod';

/** A UUID in any version (the SDK sends v7, the spec shows v4). */
export const uuid = z
  .string()
  .regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/, 'Input should be a valid UUID')
  .transform((s) => s.toLowerCase());

const ISO_RE = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?$/;

/**
 * Parses an ISO-8601 string (timezone optional, read as UTC) or an epoch-milliseconds number
 * into microseconds since the epoch. Returns null when the value cannot be a timestamp.
 */
export function toEpochMicros(value: string | number): number | null {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) return null;
    return Math.round(value * 1000);
  }
  if (isCanonicalIso(value)) {
    // The hot path: the SDK's and our own form, 2026-11-22T04:04:29.623001Z.
    // Digits read in place (the characters were checked above): no substrings to allocate and parse.
    const d2 = (i: number): number => (value.charCodeAt(i) - 48) * 10 + value.charCodeAt(i + 1) - 48;
    const base = Date.UTC(d2(0) * 100 + d2(2), d2(5) - 1, d2(8), d2(11), d2(14), d2(17));
    return base * 1000 + d2(20) * 10_000 + d2(22) * 100 + d2(24);
  }
  const m = ISO_RE.exec(value.trim());
  if (!m) return null;
  const [, y, mo, d, h, mi, s = '0', frac = '', tz = 'Z'] = m;
  const base = Date.UTC(+y, +mo - 1, +d, +h, +mi, +s);
  if (Number.isNaN(base)) return null;
  let offsetMin = 0;
  if (tz !== 'Z') {
    const sign = tz.startsWith('-') ? -1 : 1;
    const digits = tz.slice(1).replace(':', '');
    offsetMin = sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4)));
  }
  const micros = Number((frac + '000000').slice(0, 6));
  return (base - offsetMin * 60_000) * 1000 + micros;
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
 * True for a canonical ISO timestamp (see isCanonicalIso) whose month, day, hour, minute and second are
 * in range: what the timestamp schema passes through as it is. Digits read in place (no substrings).
 */
export function isCanonicalIsoInRange(v: string): boolean {
  if (!isCanonicalIso(v)) return false;
  const d2 = (i: number): number => (v.charCodeAt(i) - 48) * 10 + v.charCodeAt(i + 1) - 48;
  const month = d2(5);
  const day = d2(8);
  return month >= 1 && month <= 12 && day >= 1 && day <= 31 && d2(11) < 24 && d2(14) < 60 && d2(17) < 60;
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
    ctx.addIssue({ code: 'custom', message: 'Input should be a valid datetime' });
    return z.NEVER;
  }
  return microsToIso(micros);
});

export const jsonObject = z.record(z.string(), z.unknown());

export const validationErrorSchema = z.object({
  loc: z.array(z.union([z.string(), z.number()])),
  msg: z.string(),
  type: z.string(),
});
export const httpValidationErrorSchema = z.object({ detail: z.array(validationErrorSchema) });
export type ValidationErrorItem = z.infer<typeof validationErrorSchema>;

export const errorBodySchema = z.object({ detail: z.string() });
