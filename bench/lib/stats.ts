export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx];
}

export function median(values: number[]): number {
  return percentile(values, 50);
}

export const round = (v: number, digits = 1): number => Math.round(v * 10 ** digits) / 10 ** digits;
