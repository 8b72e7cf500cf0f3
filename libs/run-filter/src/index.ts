export { FilterSyntaxError } from './filter.errors';
export {
  FILTER_COMPARATORS,
  FILTER_FIELDS,
  FILTER_FIELD_ALIASES,
  FILTER_LOGICAL_OPERATORS,
  MAX_FILTER_DEPTH,
  MAX_FILTER_LENGTH,
  parseFilter,
  resolveFilterField,
} from './filter-parser';
export type {
  FilterAnd,
  FilterArrayValue,
  FilterBooleanValue,
  FilterComparator,
  FilterComparison,
  FilterField,
  FilterFieldRef,
  FilterLogicalOperator,
  FilterNode,
  FilterNot,
  FilterNullValue,
  FilterNumberValue,
  FilterOr,
  FilterScalarValue,
  FilterStringValue,
  FilterValue,
} from './filter-parser';
export { LATENCY_SQL, THREAD_ID_SQL, compileFilter, compileFilterAst } from './filter-compiler';
export type { CompileFilterOptions, CompiledFilter, FilterParamValue } from './filter-compiler';
