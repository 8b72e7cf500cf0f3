import { chTime } from '@th/clickhouse';
import { EventLoopPacer, JSON_STRING_PIECE_CHARS, jsonStringParts, utf8Bytes } from '@th/platform';
import { NO_RUN_ID, feedbackConfigSchema, feedbackSourceSchema, type FeedbackEvent } from '@th/contracts';

/** How filters and value counts see a value: strings as they are, other JSON as its text. */
export function displayValue(valueJson: string | null): string {
  if (valueJson === null) return '';
  const v: unknown = JSON.parse(valueJson);
  return typeof v === 'string' ? v : valueJson;
}

/** One JSONEachRow line of the feedback table. */
export function feedbackRowJson(e: FeedbackEvent): string {
  return JSON.stringify(feedbackRow(e));
}

/**
 * The JSONEachRow lines of `events` as UTF-8, made in slices of the pacer's length: a 25 MB correction or value
 * is quoted and encoded in pieces (one JSON.stringify of the row held the event loop for ~100 ms). The bytes are
 * those of the lines of feedbackRowJson joined by newlines.
 */
export async function feedbackRowsBytes(events: readonly FeedbackEvent[], pacer = new EventLoopPacer()): Promise<Buffer> {
  const parts: string[] = [];
  for (const [i, e] of events.entries()) {
    if (pacer.due()) await pacer.yield();
    if (i > 0) parts.push('\n');
    const row = feedbackRow(e) as Record<string, unknown>;
    const large = Object.keys(row).filter((k) => typeof row[k] === 'string' && (row[k] as string).length > JSON_STRING_PIECE_CHARS);
    if (large.length === 0) {
      parts.push(JSON.stringify(row));
      continue;
    }
    const texts = new Map<string, string>();
    for (const k of large) {
      texts.set(k, row[k] as string);
      row[k] = `\u0000${k}\u0000`;
    }
    // Each large string's place in the line: its key, then the placeholder's JSON (a string in the line is
    // always escaped, so this text can only be the member itself).
    let rest = JSON.stringify(row);
    for (const k of large) {
      const marker = `${JSON.stringify(k)}:${JSON.stringify(row[k])}`;
      const at = rest.indexOf(marker);
      parts.push(rest.slice(0, at + k.length + 3));
      parts.push(...(await jsonStringParts(texts.get(k) as string, pacer)));
      rest = rest.slice(at + marker.length);
    }
    parts.push(rest);
  }
  return utf8Bytes(parts, pacer);
}

function feedbackRow(e: FeedbackEvent): object {
  return {
    tenant_id: e.tenant_id,
    run_id: e.run_id ?? NO_RUN_ID,
    id: e.id,
    trace_id: e.trace_id,
    session_id: e.session_id,
    key: e.key,
    score: e.score,
    value: displayValue(e.value_json),
    value_json: e.value_json,
    comment: e.comment,
    correction_json: e.correction_json,
    feedback_source: e.feedback_source === null ? '' : JSON.stringify(e.feedback_source),
    source_type: e.feedback_source?.type ?? '',
    feedback_config: e.feedback_config === null ? '' : JSON.stringify(e.feedback_config),
    comparative_experiment_id: e.comparative_experiment_id,
    feedback_group_id: e.feedback_group_id,
    created_at: chTime(e.created_at),
    modified_at: chTime(e.modified_at),
    version: e.version,
    is_deleted: e.is_deleted ? 1 : 0,
  };
}

/** The columns read back into an event (see eventFromRow). */
export const FEEDBACK_COLUMNS =
  'tenant_id, run_id, id, trace_id, session_id, key, score, value_json, comment, correction_json, feedback_source, feedback_config, ' +
  'comparative_experiment_id, feedback_group_id, created_at, modified_at, version, is_deleted';

export interface StoredFeedbackRow {
  tenant_id: string;
  run_id: string;
  id: string;
  trace_id: string | null;
  session_id: string | null;
  key: string;
  score: number | null;
  value_json: string | null;
  comment: string | null;
  correction_json: string | null;
  feedback_source: string;
  feedback_config: string;
  comparative_experiment_id: string | null;
  feedback_group_id: string | null;
  created_at: string;
  modified_at: string;
  version: number | string;
  is_deleted: number;
}

export function eventFromRow(r: StoredFeedbackRow): FeedbackEvent {
  return {
    tenant_id: r.tenant_id,
    id: r.id,
    run_id: r.run_id === NO_RUN_ID ? null : r.run_id,
    trace_id: r.trace_id,
    session_id: r.session_id,
    key: r.key,
    score: r.score,
    value_json: r.value_json,
    comment: r.comment,
    correction_json: r.correction_json,
    feedback_source: r.feedback_source === '' ? null : feedbackSourceSchema.parse(JSON.parse(r.feedback_source)),
    feedback_config: r.feedback_config === '' ? null : feedbackConfigSchema.parse(JSON.parse(r.feedback_config)),
    comparative_experiment_id: r.comparative_experiment_id,
    feedback_group_id: r.feedback_group_id,
    created_at: r.created_at,
    modified_at: r.modified_at,
    version: Number(r.version),
    is_deleted: Number(r.is_deleted) === 1,
  };
}
