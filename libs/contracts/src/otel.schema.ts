import { z } from 'zod';

/**
 * OTLP/JSON ExportTraceServiceRequest (opentelemetry-proto's JSON mapping: lowerCamelCase keys,
 * trace and span ids as hex, 64-bit integers as decimal strings or numbers, enums as integers).
 * Unknown fields are ignored, as the OTLP specification requires of receivers.
 */
const int64 = z.union([z.string().regex(/^-?\d+$/, 'Expected an integer (decimal string)'), z.number().int()]);
const hex = (bytes: number) =>
  z.string().regex(new RegExp(`^[0-9a-fA-F]{${bytes * 2}}$`), `Expected ${bytes} bytes as ${bytes * 2} hex characters`);

export interface OtlpAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
  arrayValue?: { values?: OtlpAnyValue[] };
  kvlistValue?: { values?: OtlpKeyValue[] };
  bytesValue?: string;
}
export interface OtlpKeyValue {
  key: string;
  value?: OtlpAnyValue;
}

export const otlpAnyValueSchema: z.ZodType<OtlpAnyValue> = z.lazy(() =>
  z
    .object({
      stringValue: z.string().optional(),
      boolValue: z.boolean().optional(),
      intValue: int64.optional(),
      doubleValue: z.union([z.number(), z.enum(['NaN', 'Infinity', '-Infinity'])]).transform(Number).optional(),
      arrayValue: z.object({ values: z.array(otlpAnyValueSchema).optional() }).optional(),
      kvlistValue: z.object({ values: z.array(otlpKeyValueSchema).optional() }).optional(),
      bytesValue: z.string().optional(),
    })
    .refine((v) => Object.values(v).filter((x) => x !== undefined).length <= 1, { message: 'An AnyValue holds at most one value' }),
).meta({ id: 'OtlpAnyValue' }); // recursive: documented once, under components.schemas
export const otlpKeyValueSchema: z.ZodType<OtlpKeyValue> = z.lazy(() => z.object({ key: z.string(), value: otlpAnyValueSchema.optional() })).meta({ id: 'OtlpKeyValue' });

const attributes = z.array(otlpKeyValueSchema).optional();

const SPAN_KINDS = ['SPAN_KIND_UNSPECIFIED', 'SPAN_KIND_INTERNAL', 'SPAN_KIND_SERVER', 'SPAN_KIND_CLIENT', 'SPAN_KIND_PRODUCER', 'SPAN_KIND_CONSUMER'] as const;
const STATUS_CODES = ['STATUS_CODE_UNSET', 'STATUS_CODE_OK', 'STATUS_CODE_ERROR'] as const;
/** An enum as its integer (the OTLP/JSON form) or its name (the protobuf JSON mapping); unknown values are rejected. */
const enumOf = (names: readonly string[]) =>
  z.union([
    z
      .number()
      .int()
      .refine((n) => n >= 0 && n < names.length, { message: `Unknown enum value; expected 0 to ${names.length - 1}` }),
    z.enum(names as [string, ...string[]]).transform((n) => names.indexOf(n)),
  ]);

export const otlpSpanSchema = z.object({
  traceId: hex(16),
  spanId: hex(8),
  traceState: z.string().optional(),
  parentSpanId: z.union([hex(8), z.literal('')]).optional(),
  flags: z.number().int().optional(),
  name: z.string(),
  kind: enumOf(SPAN_KINDS).optional(),
  startTimeUnixNano: int64,
  endTimeUnixNano: int64.optional(),
  attributes,
  droppedAttributesCount: z.number().int().optional(),
  events: z
    .array(z.object({ timeUnixNano: int64, name: z.string(), attributes, droppedAttributesCount: z.number().int().optional() }))
    .optional(),
  droppedEventsCount: z.number().int().optional(),
  links: z.array(z.object({ traceId: hex(16), spanId: hex(8), traceState: z.string().optional(), attributes, flags: z.number().int().optional() })).optional(),
  droppedLinksCount: z.number().int().optional(),
  status: z.object({ message: z.string().optional(), code: enumOf(STATUS_CODES).optional() }).optional(),
});

export const otlpTraceRequestSchema = z.object({
  resourceSpans: z
    .array(
      z.object({
        resource: z.object({ attributes, droppedAttributesCount: z.number().int().optional() }).optional(),
        scopeSpans: z
          .array(
            z.object({
              scope: z.object({ name: z.string().optional(), version: z.string().optional(), attributes }).optional(),
              spans: z.array(otlpSpanSchema).optional(),
              schemaUrl: z.string().optional(),
            }),
          )
          .optional(),
        schemaUrl: z.string().optional(),
      }),
    )
    .optional(),
});
export type OtlpTraceRequest = z.infer<typeof otlpTraceRequestSchema>;
export const OTLP_SPAN_KIND_COUNT = SPAN_KINDS.length;
export const OTLP_STATUS_CODE_COUNT = STATUS_CODES.length;
