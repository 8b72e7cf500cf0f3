import { RUN_FILTER_FIELDS, type RunFilterField } from './run-table.schema';

// The filter language's vocabulary is part of the API's contract: the parser (libs/run-filter) checks
// against it, and the web app's filter editor completes from it.

export const FILTER_COMPARATORS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'has', 'search', 'in', 'like', 'ilike'] as const;
export type FilterComparator = (typeof FILTER_COMPARATORS)[number];

export const FILTER_LOGICAL_OPERATORS = ['and', 'or', 'not'] as const;
export type FilterLogicalOperator = (typeof FILTER_LOGICAL_OPERATORS)[number];

/** Fields of the filter language beyond the run's own (RUN_FIELDS' `filter`): keys and values inside JSON columns, and feedback. */
export const FILTER_FAMILY_FIELDS = [
  'metadata_key',
  'metadata_value',
  'input_key',
  'input_value',
  'output_key',
  'output_value',
  'feedback_key',
  'feedback_score',
  'feedback_value',
] as const;

/** Canonical field names; aliases are resolved by the parser (see FILTER_FIELD_ALIASES). */
export const FILTER_FIELDS: readonly FilterField[] = [...RUN_FILTER_FIELDS, ...FILTER_FAMILY_FIELDS];
export type FilterField = RunFilterField | (typeof FILTER_FAMILY_FIELDS)[number];

export const FILTER_FIELD_ALIASES: Readonly<Record<string, FilterField>> = {
  run_id: 'id',
  tag: 'tags',
};
