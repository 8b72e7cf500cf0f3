import type { Identity } from '@th/contracts';

/**
 * The run query's filter language, owned by the query service. The export worker asks it which runs
 * of a chunk match, so an export's filter means exactly what the same filter means in POST /runs/query.
 */
export abstract class ExportRunFilter {
  /** Rejects an invalid expression with a ValidationFailed (loc body.filter). */
  abstract validate(identity: Identity, sessionId: string, filter: string): Promise<void>;
  /** The ids among `ids` (runs of one project) that the filter matches. */
  abstract matching(identity: Identity, sessionId: string, ids: string[], filter: string): Promise<Set<string>>;
}
