import { useEffect, useRef } from 'react';
import type { DashboardChart } from '@th/contracts';

const COLORS = ['#1f5fd1', '#d1651f', '#2e9e5b', '#9b3fc4', '#c43f6e', '#6b7280'];

/**
 * One dashboard chart drawn by uPlot (loaded on first use, so the initial bundle stays small), with a
 * legend in HTML that names each series and its total or mean over the range.
 */
export function TimeChart({ chart, format }: { chart: DashboardChart; format: (v: number | null) => string }) {
  const box = useRef<HTMLDivElement>(null);
  const times = [...new Set(chart.data.map((p) => p.timestamp))].sort();
  const columns = chart.series.map((s) => {
    const byTime = new Map(chart.data.filter((p) => p.series_id === s.id).map((p) => [p.timestamp, p.value]));
    return times.map((t) => byTime.get(t) ?? null);
  });
  const summary = (values: (number | null)[]): number | null => {
    const present = values.filter((v): v is number => v !== null);
    if (present.length === 0) return null;
    const sum = present.reduce((a, b) => a + b, 0);
    return chart.id === 'run_count' || chart.id === 'tokens' || chart.id === 'cost' ? sum : sum / present.length;
  };
  const key = JSON.stringify([times, columns]);

  useEffect(() => {
    const el = box.current;
    if (!el || times.length === 0) return;
    let plot: { destroy(): void } | null = null;
    let cancelled = false;
    void import('./uplot-lazy').then(({ default: UPlot }) => {
      if (cancelled) return;
      const xs = times.map((t) => Date.parse(t) / 1000);
      plot = new UPlot(
        {
          width: Math.max(280, el.clientWidth),
          height: 180,
          legend: { show: false },
          series: [{}, ...chart.series.map((s, i) => ({ label: s.name, stroke: COLORS[i % COLORS.length], width: 2, spanGaps: false, points: { show: times.length < 40 } }))],
          axes: [{ stroke: 'currentColor' }, { stroke: 'currentColor', size: 60 }],
        },
        [xs, ...columns] as unknown as [number[], ...(number | null)[][]],
        el,
      );
    });
    return () => {
      cancelled = true;
      plot?.destroy();
    };
    // The key stands for the data: redraw only when it changes.
  }, [key]);

  return (
    <figure className="chart" data-chart={chart.id}>
      <figcaption>{chart.title}</figcaption>
      <div ref={box} className="plot" role="img" aria-label={`${chart.title} over time`} />
      <ul className="legend" aria-label={`${chart.title} legend`}>
        {chart.series.map((s, i) => (
          <li key={s.id} data-series={s.id}>
            <span className="swatch" style={{ background: COLORS[i % COLORS.length] }} aria-hidden="true" /> {s.name}:{' '}
            <strong data-summary={s.id}>{format(summary(columns[i]))}</strong>
          </li>
        ))}
        {chart.series.length === 0 && <li className="muted">No data in this range</li>}
      </ul>
    </figure>
  );
}
