import {
  OTLP_SPAN_KIND_COUNT,
  OTLP_STATUS_CODE_COUNT,
  otlpSpanSchema,
  otlpTraceRequestSchema,
  type OtlpAnyValue,
  type OtlpKeyValue,
  type OtlpTraceRequest,
  type ValidationErrorItem,
} from '@th/contracts';
import { EventLoopPacer, parseOrThrow, storableValueProblems, ValidationFailed } from '@th/platform';
import { otlpTypes } from './otlp-proto';

type Loc = (string | number)[];
type Obj = Record<string, unknown>;

type Long = { high: number; low: number; toString(): string };
type Bytes = Uint8Array;

const bytesHex = (b: unknown): string => (b instanceof Uint8Array ? Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex') : '');
/** A fixed64/int64 field as protobufjs decodes it (a Long, or a number without long.js) in decimal. */
const int64 = (v: unknown): string => (typeof v === 'number' ? String(v) : v && typeof v === 'object' ? (v as Long).toString() : '0');

function idHex(v: unknown, bytes: number, loc: Loc, errors: ValidationErrorItem[], optional = false): string {
  const hex = bytesHex(v);
  if (hex.length === 0 && optional) return '';
  if (hex.length !== bytes * 2) errors.push({ loc, msg: `Expected ${bytes} bytes, got ${hex.length / 2}`, type: 'value_error' });
  return hex;
}

function checkEnum(v: unknown, count: number, loc: Loc, errors: ValidationErrorItem[]): void {
  if (v === undefined || v === null) return;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v >= count) {
    errors.push({ loc, msg: `Unknown enum value ${String(v)}; expected 0 to ${count - 1}`, type: 'enum' });
  }
}

/** A decoded AnyValue in the OTLP/JSON shape: its oneof case names the one field that is set. */
function anyValueOf(v: Obj | null | undefined): OtlpAnyValue | undefined {
  if (!v) return undefined;
  switch (v.value as string | undefined) {
    case 'stringValue':
      return { stringValue: v.stringValue as string };
    case 'boolValue':
      return { boolValue: v.boolValue as boolean };
    case 'intValue':
      return { intValue: int64(v.intValue) };
    case 'doubleValue':
      return { doubleValue: v.doubleValue as number };
    case 'arrayValue':
      return { arrayValue: { values: (((v.arrayValue as Obj | null)?.values as Obj[] | undefined) ?? []).map((x) => anyValueOf(x) ?? {}) } };
    case 'kvlistValue':
      return { kvlistValue: { values: kvsOf((v.kvlistValue as Obj | null)?.values as Obj[] | undefined) } };
    case 'bytesValue':
      return { bytesValue: Buffer.from(v.bytesValue as Bytes).toString('base64') };
    default:
      return {};
  }
}

const kvsOf = (kvs: Obj[] | undefined): OtlpKeyValue[] => (kvs ?? []).map((kv) => ({ key: kv.key as string, value: anyValueOf(kv.value as Obj | null) }));

/**
 * An OTLP/protobuf ExportTraceServiceRequest, decoded by protobufjs from the official definitions, in
 * the OTLP/JSON shape (ids as hex, 64-bit integers as decimal strings), read straight off the decoded
 * message. Malformed bytes, ids of the wrong length and unknown enum values are 422s naming where they are.
 */
export function decodeOtlpProtobuf(body: Buffer): OtlpTraceRequest {
  const { request } = otlpTypes();
  let msg: Obj;
  try {
    // protobufjs refuses messages nested past 100 levels (Reader.recursionLimit): an attribute value (three
    // messages a level) nests some 33 levels at most, well inside MAX_JSON_DEPTH.
    msg = request.decode(body) as unknown as Obj;
  } catch (err) {
    throw new ValidationFailed([{ loc: ['body'], msg: `Malformed OTLP protobuf (ExportTraceServiceRequest): ${(err as Error).message}`, type: 'value_error' }]);
  }
  const errors: ValidationErrorItem[] = [];
  const resourceSpans = ((msg.resourceSpans as Obj[] | undefined) ?? []).map((rs, i) => {
    const resource = rs.resource as Obj | null | undefined;
    return {
      resource: { attributes: kvsOf(resource?.attributes as Obj[] | undefined) },
      scopeSpans: ((rs.scopeSpans as Obj[] | undefined) ?? []).map((ss, j) => {
        const scope = ss.scope as Obj | null | undefined;
        return {
          scope: scope ? { name: scope.name as string, version: scope.version as string } : undefined,
          spans: ((ss.spans as Obj[] | undefined) ?? []).map((s, k) => {
            const loc: Loc = ['body', 'resourceSpans', i, 'scopeSpans', j, 'spans', k];
            const status = s.status as Obj | null | undefined;
            checkEnum(s.kind, OTLP_SPAN_KIND_COUNT, [...loc, 'kind'], errors);
            if (status) checkEnum(status.code, OTLP_STATUS_CODE_COUNT, [...loc, 'status', 'code'], errors);
            if (errors.length > 100) throw new ValidationFailed(errors);
            const links = s.links as Obj[] | undefined;
            return {
              traceId: idHex(s.traceId, 16, [...loc, 'traceId'], errors),
              spanId: idHex(s.spanId, 8, [...loc, 'spanId'], errors),
              parentSpanId: idHex(s.parentSpanId, 8, [...loc, 'parentSpanId'], errors, true),
              name: s.name as string,
              kind: s.kind as number,
              startTimeUnixNano: int64(s.startTimeUnixNano),
              endTimeUnixNano: int64(s.endTimeUnixNano),
              attributes: kvsOf(s.attributes as Obj[] | undefined),
              events: ((s.events as Obj[] | undefined) ?? []).map((e) => ({ timeUnixNano: int64(e.timeUnixNano), name: e.name as string, attributes: kvsOf(e.attributes as Obj[] | undefined) })),
              links: links && links.length > 0 ? links.map((l) => ({ traceId: bytesHex(l.traceId), spanId: bytesHex(l.spanId) })) : undefined,
              status: status ? { code: status.code as number, message: status.message as string } : undefined,
            };
          }),
        };
      }),
    };
  });
  if (errors.length > 0) throw new ValidationFailed(errors);
  return { resourceSpans };
}

/** An OTLP/JSON ExportTraceServiceRequest, validated against the contract. */
export function decodeOtlpJson(body: unknown): OtlpTraceRequest {
  return parseOrThrow(otlpTraceRequestSchema, body ?? {}, ['body']);
}

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * decodeOtlpJson with the spans checked one at a time, giving the event loop way between slices (one zod parse
 * of 25 MB of spans holds it for seconds): the envelope is parsed with its span lists emptied, then each span.
 * A body with any problem is parsed again whole by decodeOtlpJson, so a 422 lists the same items in the same order.
 */
export async function decodeOtlpJsonPaced(body: unknown, pacer = new EventLoopPacer()): Promise<OtlpTraceRequest> {
  const value = body ?? {};
  if (storableValueProblems(value, ['body']).length > 0 || !isObj(value) || !Array.isArray(value.resourceSpans)) return decodeOtlpJson(value);
  const lists: unknown[][] = [];
  const envelope = {
    ...value,
    resourceSpans: value.resourceSpans.map((rs: unknown) =>
      isObj(rs) && Array.isArray(rs.scopeSpans)
        ? {
            ...rs,
            scopeSpans: rs.scopeSpans.map((ss: unknown) => {
              if (!isObj(ss) || !Array.isArray(ss.spans)) return ss;
              lists.push(ss.spans);
              return { ...ss, spans: [] };
            }),
          }
        : rs,
    ),
  };
  const outer = otlpTraceRequestSchema.safeParse(envelope);
  if (!outer.success) return decodeOtlpJson(value);
  let at = 0;
  for (const rs of outer.data.resourceSpans ?? []) {
    for (const ss of rs.scopeSpans ?? []) {
      if (ss.spans === undefined) continue;
      const spans = lists[at++];
      for (const span of spans) {
        if (pacer.due()) await pacer.yield();
        const r = otlpSpanSchema.safeParse(span);
        if (!r.success) return decodeOtlpJson(value);
        ss.spans.push(r.data);
      }
    }
  }
  return outer.data;
}

/** The protobuf ExportTraceServiceResponse (empty: everything was accepted). */
export function encodeOtlpResponse(): Buffer {
  const { response } = otlpTypes();
  return Buffer.from(response.encode(response.create({})).finish());
}
