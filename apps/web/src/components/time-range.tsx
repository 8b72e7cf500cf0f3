import { setSearchParam } from '../router';

/** The time ranges a view offers; the URL carries the key (`?range=7d`), so a view with its range can be shared. */
export const RANGES = {
  '1h': { label: 'Last hour', ms: 3_600_000, stride: { minutes: 1 } },
  '24h': { label: 'Last 24 hours', ms: 86_400_000, stride: { minutes: 30 } },
  '7d': { label: 'Last 7 days', ms: 7 * 86_400_000, stride: { hours: 3 } },
  '30d': { label: 'Last 30 days', ms: 30 * 86_400_000, stride: { days: 1 } },
  all: { label: 'All time', ms: null, stride: null },
} as const;
export type RangeKey = keyof typeof RANGES;

export function rangeOf(value: string | null, fallback: RangeKey): RangeKey {
  return value !== null && value in RANGES ? (value as RangeKey) : fallback;
}

/** The range's start as an ISO timestamp, rounded down to the minute so that query keys stay stable while it is open. */
export function rangeStart(key: RangeKey): string | null {
  const ms = RANGES[key].ms;
  if (ms === null) return null;
  const now = Math.floor(Date.now() / 60_000) * 60_000;
  return new Date(now - ms).toISOString();
}

export function TimeRangePicker({ value, fallback, allowAll = true }: { value: RangeKey; fallback: RangeKey; allowAll?: boolean }) {
  return (
    <label>
      Time range{' '}
      <select value={value} onChange={(e) => setSearchParam('range', e.target.value === fallback ? null : e.target.value)}>
        {(Object.keys(RANGES) as RangeKey[])
          .filter((k) => allowAll || k !== 'all')
          .map((k) => (
            <option key={k} value={k}>
              {RANGES[k].label}
            </option>
          ))}
      </select>
    </label>
  );
}
