export interface FeedbackOptions {
  /** Serve POST /feedback, PATCH and DELETE /feedback/{id} (the ingest service). */
  writes: boolean;
  /** Serve GET /feedback and GET /feedback/{id} (the query service). */
  reads: boolean;
  /** Consume the feedback topic and write ClickHouse in this process (ingest's writer role). */
  writer: boolean;
}
export const FEEDBACK_OPTIONS = Symbol('FEEDBACK_OPTIONS');
