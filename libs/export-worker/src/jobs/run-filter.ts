import { ValidationFailed } from '@th/platform';
import { compileFilter, FilterSyntaxError, type CompiledFilter } from '@th/run-filter';

/** Parameter name prefix of an export filter's values in the chunk query (distinct from the chunk query's own names). */
const FILTER_PARAM_PREFIX = 'xf_';

/**
 * Compiles an export's filter (the run query's filter language, shared with POST /runs/query through
 * @th/run-filter) into a boolean ClickHouse expression over `runs`. The caller binds `{tenant:UUID}`.
 * An invalid expression is a 422 at `body.filter`.
 */
export function compileExportFilter(filter: string): CompiledFilter {
  try {
    return compileFilter(filter, { paramPrefix: FILTER_PARAM_PREFIX, tenantParam: 'tenant' });
  } catch (err) {
    if (err instanceof FilterSyntaxError) throw new ValidationFailed([{ loc: ['body', 'filter'], msg: err.message, type: 'value_error' }]);
    throw err;
  }
}
