export const fmtLatency = (s: number | null | undefined): string =>
  s === null || s === undefined ? '—' : s < 1 ? `${Math.round(s * 1000)} ms` : `${s.toFixed(2)} s`;
export const fmtInt = (n: number | null | undefined): string => (n === null || n === undefined ? '—' : n.toLocaleString('en-US'));
export const fmtCost = (n: number | null | undefined): string => (n === null || n === undefined ? '—' : `$${n.toFixed(n < 0.01 ? 6 : 4)}`);
export const fmtPct = (n: number | null | undefined): string => (n === null || n === undefined ? '—' : `${(n * 100).toFixed(1)}%`);
export const fmtTime = (iso: string | null | undefined): string => {
  if (!iso) return '—';
  const d = new Date(iso.endsWith('Z') || /[+-]\d\d:\d\d$/.test(iso) ? iso : `${iso}Z`);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString('en-GB', { hour12: false });
};
