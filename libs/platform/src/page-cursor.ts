import { DomainError, ErrorCode } from './errors';

/**
 * Opaque page cursors of the v2 API. The payload is the caller's own position (never a tenant or an id it
 * could not read anyway); a cursor that does not decode to the expected shape is a 422 at `loc`.
 */
export function encodePageCursor(payload: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify(payload)).toString('base64url');
}

export function decodePageCursor<T>(raw: string, loc: (string | number)[], valid: (v: Record<string, unknown>) => v is Record<string, unknown> & T): T {
  try {
    const v = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as unknown;
    if (v !== null && typeof v === 'object' && !Array.isArray(v) && valid(v as Record<string, unknown>)) return v as T;
  } catch {
    // fall through
  }
  throw new DomainError(ErrorCode.Validation, 'invalid cursor', [{ loc, msg: 'Invalid cursor', type: 'value_error' }]);
}

/** An offset in a cursor (lists ordered without a keyset). */
export function decodeOffsetCursor(raw: string | undefined, loc: (string | number)[]): number {
  if (raw === undefined) return 0;
  return decodePageCursor<{ o: number }>(raw, loc, (v): v is { o: number } => typeof v.o === 'number' && Number.isInteger(v.o) && v.o >= 0 && v.o <= 10_000_000).o;
}
