import { useMemo } from 'react';
import { LazyJson } from './lazy-json';
import { localSource } from './run-loader';

/** A value the page holds, in the lazy JSON viewer (small values open level by level). */
export function JsonView({ value, label }: { value: unknown; label: string }) {
  const source = useMemo(() => localSource(value ?? null), [value]);
  return <LazyJson source={source} label={label} />;
}
