import { microsToIso, toEpochMicros } from './common.schema';

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
