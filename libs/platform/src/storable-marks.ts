/**
 * Objects of a large request body whose text the JSON worker already found free of what storableValueProblems
 * refuses (no \u0000 or surrogate escape anywhere, nesting within MAX_JSON_DEPTH), with their depth in that body.
 * The walk skips such an object when it meets it no deeper than it sat in the body, so a 25 MB body is not walked
 * again on the event loop. Request values are not mutated with client text after parsing, so a mark stays true.
 */
const marks = new WeakMap<object, number>();

export function markStorable(value: unknown, depth: number): void {
  if (typeof value === 'object' && value !== null) marks.set(value, depth);
}

/** True when `value`, met at `depth` of a walk, was marked at that depth or deeper. */
export function knownStorable(value: object, depth: number): boolean {
  const at = marks.get(value);
  return at !== undefined && depth <= at;
}
