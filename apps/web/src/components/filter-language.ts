import type { FilterComparator, FilterField, FilterLogicalOperator } from '@th/contracts';

// The filter language's vocabulary for completion. The app takes only types from @th/contracts; the
// Record types make the compiler refuse a list that misses or invents a comparator or a field.

export const COMPARATORS: Record<FilterComparator, string> = {
  eq: 'equals',
  neq: 'not equal',
  gt: 'greater than',
  gte: 'greater or equal',
  lt: 'less than',
  lte: 'less or equal',
  has: 'list or map has the value',
  search: 'full-text search',
  in: 'one of a list',
  like: 'SQL LIKE pattern',
  ilike: 'LIKE, ignoring case',
};

export const LOGICAL: Record<FilterLogicalOperator, string> = {
  and: 'all of the conditions',
  or: 'any of the conditions',
  not: 'negates a condition',
};

export const FIELDS: Record<FilterField, string> = {
  id: 'run id',
  session_id: 'project id',
  trace_id: 'trace (root run) id',
  thread_id: 'conversation thread',
  parent_run_id: 'parent run id',
  reference_example_id: 'dataset example id',
  name: 'run name',
  run_type: 'llm, chain, tool…',
  start_time: 'start time',
  end_time: 'end time',
  status: 'success, error, pending',
  is_root: 'true for trace roots',
  dotted_order: 'position in the trace',
  trace_tier: 'retention tier',
  inputs: 'inputs (JSON)',
  outputs: 'outputs (JSON)',
  error: 'error text',
  tags: 'tags',
  total_tokens: 'tokens',
  prompt_tokens: 'prompt tokens',
  completion_tokens: 'completion tokens',
  total_cost: 'cost (USD)',
  prompt_cost: 'prompt cost',
  completion_cost: 'completion cost',
  first_token_time: 'time of the first token',
  latency: 'seconds',
  metadata: 'metadata map',
  metadata_key: 'a metadata key',
  metadata_value: 'a metadata value',
  input_key: 'a key in inputs',
  input_value: 'a value in inputs',
  output_key: 'a key in outputs',
  output_value: 'a value in outputs',
  feedback_key: 'a feedback key',
  feedback_score: 'a feedback score',
  feedback_value: 'a feedback value',
};

export interface KnownValues {
  names: string[];
  tags: string[];
  metadataKeys: string[];
  feedbackKeys: string[];
}

/** Where the cursor is in a filter: what may be written there. */
export type FilterSlot = { kind: 'operator' } | { kind: 'field' } | { kind: 'value'; field: string } | { kind: 'none' };

/** Reads the text before the cursor (strings skipped) to find the innermost open call and the argument the cursor is in. */
export function slotAt(before: string): FilterSlot {
  const stack: { fn: string; args: string[]; arg: string }[] = [];
  let word = '';
  let i = 0;
  const top = { args: [] as string[], arg: '' };
  while (i < before.length) {
    const ch = before[i];
    if (ch === '"' || ch === "'") {
      const end = before.indexOf(ch, i + 1);
      if (end < 0) return { kind: 'none' }; // inside a string literal: values are completed at its start only
      i = end + 1;
      continue;
    }
    const frame = stack[stack.length - 1] ?? top;
    if (ch === '(') {
      stack.push({ fn: word.trim(), args: [], arg: '' });
      word = '';
    } else if (ch === ')') {
      stack.pop();
      word = '';
    } else if (ch === ',') {
      frame.args.push(frame.arg.trim());
      frame.arg = '';
      word = '';
    } else {
      frame.arg += ch;
      word = /[\w.]/.test(ch) ? word + ch : '';
    }
    i++;
  }
  const open = stack[stack.length - 1];
  if (!open || open.fn in LOGICAL) return { kind: 'operator' };
  if (open.fn in COMPARATORS) {
    if (open.args.length === 0) return { kind: 'field' };
    if (open.args.length === 1) return { kind: 'value', field: open.args[0] };
  }
  return { kind: 'none' };
}

export function valuesFor(field: string, known: KnownValues): string[] {
  switch (field) {
    case 'name':
      return known.names;
    case 'tags':
    case 'tag':
      return known.tags;
    case 'metadata_key':
      return known.metadataKeys;
    case 'feedback_key':
      return known.feedbackKeys;
    case 'run_type':
      return ['llm', 'chain', 'tool', 'retriever', 'embedding', 'prompt', 'parser'];
    case 'status':
      return ['success', 'error', 'pending'];
    case 'is_root':
      return ['true', 'false'];
    default:
      return [];
  }
}
