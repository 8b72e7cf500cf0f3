import { OTLP_SPAN_KIND_COUNT, OTLP_STATUS_CODE_COUNT, otlpTraceRequestSchema, type OtlpTraceRequest, type ValidationErrorItem } from '@th/contracts';
import { parseOrThrow, ValidationFailed } from '@th/platform';
import { otlpTypes } from './otlp-proto';

type Loc = (string | number)[];
type Obj = Record<string, unknown>;

function idHex(v: unknown, bytes: number, loc: Loc, errors: ValidationErrorItem[], optional = false): string {
  const b64 = typeof v === 'string' ? v : '';
  const buf = Buffer.from(b64, 'base64');
  if (buf.length === 0 && optional) return '';
  if (buf.length !== bytes) errors.push({ loc, msg: `Expected ${bytes} bytes, got ${buf.length}`, type: 'value_error' });
  return buf.toString('hex');
}

function checkEnum(v: unknown, count: number, loc: Loc, errors: ValidationErrorItem[]): void {
  if (v === undefined) return;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v >= count) {
    errors.push({ loc, msg: `Unknown enum value ${String(v)}; expected 0 to ${count - 1}`, type: 'enum' });
  }
}

/**
 * An OTLP/protobuf ExportTraceServiceRequest, decoded by protobufjs from the official definitions, in
 * the OTLP/JSON shape (ids as hex, 64-bit integers as strings). Malformed bytes, ids of the wrong
 * length and unknown enum values are 422s naming where they are.
 */
export function decodeOtlpProtobuf(body: Buffer): OtlpTraceRequest {
  const { request } = otlpTypes();
  let obj: Obj;
  try {
    obj = request.toObject(request.decode(body), { longs: String, bytes: String, enums: Number, defaults: false, arrays: true }) as Obj;
  } catch (err) {
    throw new ValidationFailed([{ loc: ['body'], msg: `Malformed OTLP protobuf (ExportTraceServiceRequest): ${(err as Error).message}`, type: 'value_error' }]);
  }
  const errors: ValidationErrorItem[] = [];
  const resourceSpans = (obj.resourceSpans as Obj[] | undefined) ?? [];
  resourceSpans.forEach((rs, i) => {
    ((rs.scopeSpans as Obj[] | undefined) ?? []).forEach((ss, j) => {
      ((ss.spans as Obj[] | undefined) ?? []).forEach((s, k) => {
        const loc: Loc = ['body', 'resourceSpans', i, 'scopeSpans', j, 'spans', k];
        s.traceId = idHex(s.traceId, 16, [...loc, 'traceId'], errors);
        s.spanId = idHex(s.spanId, 8, [...loc, 'spanId'], errors);
        s.parentSpanId = idHex(s.parentSpanId, 8, [...loc, 'parentSpanId'], errors, true);
        if (s.startTimeUnixNano === undefined) s.startTimeUnixNano = '0';
        checkEnum(s.kind, OTLP_SPAN_KIND_COUNT, [...loc, 'kind'], errors);
        const status = s.status as Obj | undefined;
        if (status) checkEnum(status.code, OTLP_STATUS_CODE_COUNT, [...loc, 'status', 'code'], errors);
        for (const link of (s.links as Obj[] | undefined) ?? []) {
          link.traceId = Buffer.from(String(link.traceId ?? ''), 'base64').toString('hex');
          link.spanId = Buffer.from(String(link.spanId ?? ''), 'base64').toString('hex');
        }
        if (errors.length > 100) throw new ValidationFailed(errors);
      });
    });
  });
  if (errors.length > 0) throw new ValidationFailed(errors);
  return obj as OtlpTraceRequest;
}

/** An OTLP/JSON ExportTraceServiceRequest, validated against the contract. */
export function decodeOtlpJson(body: unknown): OtlpTraceRequest {
  return parseOrThrow(otlpTraceRequestSchema, body ?? {}, ['body']);
}

/** The protobuf ExportTraceServiceResponse (empty: everything was accepted). */
export function encodeOtlpResponse(): Buffer {
  const { response } = otlpTypes();
  return Buffer.from(response.encode(response.create({})).finish());
}
