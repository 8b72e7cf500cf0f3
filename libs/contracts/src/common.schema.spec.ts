import { isCalendarDateTime, isCanonicalIsoInRange, microsToIso, parseBooleanWord, queryBool, timestamp, toEpochMicros } from './common.schema';

/** The formatting microsToIso did before its arithmetic fast path: Date's, then the microseconds. */
function viaDate(micros: number): string {
  const ms = Math.floor(micros / 1000);
  return `${new Date(ms).toISOString().slice(0, 23)}${String(micros - ms * 1000).padStart(3, '0')}Z`;
}

describe('microsToIso', () => {
  it('formats like Date at the edges of days, months, leap years, centuries and the fast range', () => {
    const day = 86_400_000_000;
    const edges = [
      0, 1, 999, 1000, 999_999, 1_000_000, day - 1, day,
      Date.UTC(2000, 1, 29, 23, 59, 59, 999) * 1000 + 999, // a leap day of a century divisible by 400
      Date.UTC(2100, 1, 28, 12) * 1000, // 2100 is not a leap year
      Date.UTC(2100, 2, 1) * 1000 - 1,
      Date.UTC(2024, 11, 31, 23, 59, 59, 999) * 1000 + 999,
      Date.UTC(2026, 10, 22, 4, 4, 29, 623) * 1000 + 1,
      Number.MAX_SAFE_INTEGER, // the last instant formatted by arithmetic (2255-06-05)
      Date.UTC(9999, 11, 31, 23, 59, 59, 999) * 1000, // beyond the safe integers: through Date
      -1_000_000, // before the epoch: through Date
    ];
    for (const m of edges) expect(microsToIso(m)).toBe(viaDate(m));
  });

  it('formats like Date for random instants from 1970 to 2255, and toEpochMicros reads each back', () => {
    let seed = 42;
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648);
    for (let i = 0; i < 20_000; i++) {
      const micros = Math.floor(random() * 9_007_199_254) * 1_000_000 + Math.floor(random() * 1_000_000);
      const iso = microsToIso(micros);
      expect(iso).toBe(viaDate(micros));
      expect(toEpochMicros(iso)).toBe(micros);
    }
  });
});

describe('timestamps of the calendar', () => {
  it('refuses days past the end of their month, leap years counted', () => {
    expect(isCalendarDateTime(2024, 2, 29, 0, 0, 0)).toBe(true);
    expect(isCalendarDateTime(2024, 2, 30, 0, 0, 0)).toBe(false);
    expect(isCalendarDateTime(2023, 2, 29, 0, 0, 0)).toBe(false);
    expect(isCalendarDateTime(2000, 2, 29, 0, 0, 0)).toBe(true); // divisible by 400
    expect(isCalendarDateTime(2100, 2, 29, 0, 0, 0)).toBe(false); // divisible by 100 only
    const lengths = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    lengths.forEach((days, i) => {
      expect(isCalendarDateTime(2025, i + 1, days, 0, 0, 0)).toBe(true);
      expect(isCalendarDateTime(2025, i + 1, days + 1, 0, 0, 0)).toBe(false);
    });
    expect(isCalendarDateTime(2025, 0, 1, 0, 0, 0)).toBe(false);
    expect(isCalendarDateTime(2025, 13, 1, 0, 0, 0)).toBe(false);
    expect(isCalendarDateTime(2025, 1, 0, 0, 0, 0)).toBe(false);
  });

  it('agrees with Date on every day of 400 years (one whole leap cycle)', () => {
    for (let y = 1900; y < 2300; y++) {
      for (let m = 1; m <= 12; m++) {
        for (let d = 28; d <= 32; d++) {
          const real = new Date(Date.UTC(y, m - 1, d)).getUTCDate() === d;
          expect(isCalendarDateTime(y, m, d, 12, 0, 0)).toBe(real);
        }
      }
    }
  });

  it('refuses hours past 23, minutes and seconds past 59, and years outside 1900-2299', () => {
    expect(isCalendarDateTime(2024, 1, 1, 23, 59, 59)).toBe(true);
    expect(isCalendarDateTime(2024, 1, 1, 24, 0, 0)).toBe(false);
    expect(isCalendarDateTime(2024, 1, 1, 25, 0, 0)).toBe(false);
    expect(isCalendarDateTime(2024, 1, 1, 0, 60, 0)).toBe(false);
    expect(isCalendarDateTime(2024, 1, 1, 0, 0, 60)).toBe(false);
    expect(isCalendarDateTime(1900, 1, 1, 0, 0, 0)).toBe(true);
    expect(isCalendarDateTime(2299, 12, 31, 23, 59, 59)).toBe(true);
    expect(isCalendarDateTime(1899, 12, 31, 23, 59, 59)).toBe(false);
    expect(isCalendarDateTime(2300, 1, 1, 0, 0, 0)).toBe(false);
    expect(isCalendarDateTime(0, 1, 1, 0, 0, 0)).toBe(false);
  });

  it('the canonical fast form and the other forms refuse the same values instead of rolling them over', () => {
    for (const bad of ['2024-02-30T00:00:00.000000Z', '2023-02-29T00:00:00.000000Z', '2024-01-01T25:00:00.000000Z', '2024-01-01T24:00:00.000000Z', '0000-01-01T00:00:00.000000Z', '0099-01-01T00:00:00.000000Z', '2300-01-01T00:00:00.000000Z']) {
      expect(isCanonicalIsoInRange(bad)).toBe(false);
      expect(toEpochMicros(bad)).toBeNull();
      // The same moment in the other accepted forms: seconds only, a space, an offset.
      expect(toEpochMicros(bad.replace('.000000Z', 'Z'))).toBeNull();
      expect(toEpochMicros(bad.replace('T', ' ').replace('.000000Z', ''))).toBeNull();
      expect(toEpochMicros(bad.replace('Z', '+00:00'))).toBeNull();
      expect(timestamp.safeParse(bad).success).toBe(false);
    }
    expect(toEpochMicros('2024-02-29T12:00:00Z')).toBe(Date.UTC(2024, 1, 29, 12) * 1000);
    expect(timestamp.parse('2024-02-29T12:00:00.5+01:00')).toBe('2024-02-29T11:00:00.500000Z');
    expect(timestamp.parse('1900-01-01T00:00:00Z')).toBe('1900-01-01T00:00:00.000000Z');
  });

  it('refuses offsets outside a day and instants outside the years once the offset is applied', () => {
    expect(toEpochMicros('2024-01-01T00:00:00+24:00')).toBeNull();
    expect(toEpochMicros('2024-01-01T00:00:00+05:60')).toBeNull();
    expect(toEpochMicros('2024-01-01T00:00:00+05:30')).toBe(Date.UTC(2023, 11, 31, 18, 30) * 1000);
    expect(toEpochMicros('1900-01-01T00:30:00+01:00')).toBeNull();
    expect(toEpochMicros('2299-12-31T23:30:00-01:00')).toBeNull();
  });

  it('epoch milliseconds: negative, non-finite and past 2299 are refused', () => {
    expect(toEpochMicros(1_700_000_000_000)).toBe(1_700_000_000_000_000);
    expect(toEpochMicros(-1)).toBeNull();
    expect(toEpochMicros(Number.POSITIVE_INFINITY)).toBeNull();
    expect(toEpochMicros(Date.UTC(2300, 0, 1))).toBeNull();
    expect(timestamp.safeParse(1e20).success).toBe(false);
  });
});

describe('queryBool', () => {
  it('reads the words the published clients write, in any case', () => {
    // Python's requests writes str(True) = "True"; the JS SDK writes "true"; others 1/0.
    for (const w of ['true', 'True', 'TRUE', '1', 'yes', 'on', 't', 'Y', ' true ']) expect(queryBool.parse(w)).toBe(true);
    for (const w of ['false', 'False', 'FALSE', '0', 'no', 'off', 'f', 'N']) expect(queryBool.parse(w)).toBe(false);
    expect(queryBool.parse(true)).toBe(true);
    expect(queryBool.parse(false)).toBe(false);
  });

  it('refuses anything else with a message naming the accepted words', () => {
    for (const w of ['', 'maybe', '2', 'truee', '-1', 'null']) {
      const r = queryBool.safeParse(w);
      expect(r.success).toBe(false);
      expect(r.error?.issues[0].message).toMatch(/valid boolean/);
    }
    expect(queryBool.safeParse(1).success).toBe(false);
  });

  it('parseBooleanWord tells a non-word apart from false', () => {
    expect(parseBooleanWord('False')).toBe(false);
    expect(parseBooleanWord('nope')).toBeUndefined();
  });
});
