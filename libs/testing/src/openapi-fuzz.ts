import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import fc from 'fast-check';

/** A JSON Schema object as an OpenAPI 3.0 document holds it. */
export type JsonSchema = { [k: string]: unknown };
export type OpenApiDocument = { openapi: string; paths: Record<string, Record<string, JsonSchema>>; components?: JsonSchema };

export interface OpenApiParameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required: boolean;
  schema: JsonSchema;
}

export interface OpenApiOperation {
  method: string;
  path: string;
  operationId: string;
  parameters: OpenApiParameter[];
  /** The request body's media type and schema (null: no body). */
  body: { contentType: string; schema: JsonSchema; pointer: string } | null;
  /** Status → JSON pointer of the JSON response schema (null: no JSON body documented). */
  responses: Record<string, string | null>;
  secured: boolean;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

const pointerPart = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/** The value at a local reference ("#/a/b"), or undefined when it points nowhere. */
export function resolvePointer(doc: unknown, ref: string): unknown {
  if (!ref.startsWith('#')) return undefined;
  let node: unknown = doc;
  for (const raw of ref.slice(1).split('/').slice(1)) {
    const part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (node === null || typeof node !== 'object' || !(part in node)) return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

/** Every `$ref` in the document that does not resolve, with where it appears. */
export function danglingRefs(doc: unknown): string[] {
  const out: string[] = [];
  const walk = (node: unknown, at: string) => {
    if (Array.isArray(node)) return node.forEach((v, i) => walk(v, `${at}/${i}`));
    if (node === null || typeof node !== 'object') return;
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && (typeof v !== 'string' || resolvePointer(doc, v) === undefined)) out.push(`${String(v)} at ${at}`);
      else walk(v, `${at}/${pointerPart(k)}`);
    }
  };
  walk(doc, '#');
  return out;
}

const deref = (doc: unknown, node: unknown): JsonSchema => {
  let n = node as JsonSchema;
  for (let i = 0; i < 16 && n && typeof n.$ref === 'string'; i++) n = resolvePointer(doc, n.$ref) as JsonSchema;
  return n ?? {};
};

/** The document's operations, parameters and schemas located by JSON pointer. */
export function listOperations(doc: OpenApiDocument): OpenApiOperation[] {
  const ops: OpenApiOperation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const raw = item[method];
      if (!raw) continue;
      const at = `#/paths/${pointerPart(path)}/${method}`;
      const op = deref(doc, raw);
      const parameters = ((op.parameters as unknown[]) ?? []).map((p) => deref(doc, p) as unknown as OpenApiParameter);
      let body: OpenApiOperation['body'] = null;
      const rb = op.requestBody ? deref(doc, op.requestBody) : null;
      const content = (rb?.content ?? {}) as Record<string, JsonSchema>;
      const contentType = Object.keys(content)[0];
      if (contentType) body = { contentType, schema: deref(doc, content[contentType].schema), pointer: `${at}/requestBody/content/${pointerPart(contentType)}/schema` };
      const responses: Record<string, string | null> = {};
      for (const [status, r] of Object.entries((op.responses ?? {}) as Record<string, unknown>)) {
        const res = r as JsonSchema;
        const base = typeof res.$ref === 'string' ? res.$ref : `${at}/responses/${status}`;
        const json = (deref(doc, res).content as Record<string, unknown> | undefined)?.['application/json'];
        responses[status] = json ? `${base}/content/application~1json/schema` : null;
      }
      ops.push({
        method,
        path,
        operationId: String(op.operationId ?? `${method} ${path}`),
        parameters: parameters.map((p) => ({ ...p, required: Boolean(p.required), schema: deref(doc, p.schema) })),
        body,
        responses,
        secured: Array.isArray(op.security) ? op.security.length > 0 : Array.isArray((doc as JsonSchema).security),
      });
    }
  }
  return ops;
}

/** Every schema location of the document (parameters, bodies, responses, components), as JSON pointers. */
export function schemaPointers(doc: OpenApiDocument): string[] {
  const out: string[] = [];
  for (const op of listOperations(doc)) {
    const at = `#/paths/${pointerPart(op.path)}/${op.method}`;
    const raw = doc.paths[op.path][op.method];
    ((raw.parameters as unknown[]) ?? []).forEach((_, i) => out.push(`${at}/parameters/${i}/schema`));
    if (op.body) out.push(op.body.pointer);
    for (const p of Object.values(op.responses)) if (p) out.push(p);
  }
  for (const name of Object.keys(((doc.components ?? {}).schemas ?? {}) as JsonSchema)) out.push(`#/components/schemas/${pointerPart(name)}`);
  return [...new Set(out)];
}

/**
 * ajv set up for the document's dialect: OpenAPI 3.0 schemas are a JSON Schema draft-07 subset plus
 * `nullable` (ajv's own keyword), `discriminator` and annotations (`example`, ...); 3.1 is draft 2020-12.
 * Schemas are compiled by reference into the document, so `#/components/...` resolves as tools resolve it.
 */
export function createDocumentValidator(doc: OpenApiDocument): { compile(pointer: string): ValidateFunction } {
  if (!/^3\.0\./.test(doc.openapi)) throw new Error(`OpenAPI ${doc.openapi}: only 3.0.x documents are served here`);
  const ajv = new Ajv({ strict: true, strictTypes: false, strictRequired: false, allErrors: false, discriminator: true, validateSchema: false });
  addFormats(ajv);
  for (const k of ['example', 'externalDocs', 'xml']) ajv.addKeyword(k);
  // The document is the root the references resolve from; its own fields are not schema keywords.
  ajv.addVocabulary(['openapi', 'info', 'servers', 'paths', 'components', 'tags', 'security', 'webhooks', 'jsonSchemaDialect']);
  const id = 'urn:tracehouse:openapi';
  ajv.addSchema(doc, id);
  const cache = new Map<string, ValidateFunction>();
  return {
    compile(pointer) {
      // Keyed by content: the same schema at many places (error bodies) compiles once; references are absolute.
      const key = JSON.stringify(resolvePointer(doc, pointer)) ?? pointer;
      let v = cache.get(key);
      if (!v) cache.set(key, (v = ajv.compile({ $ref: `${id}${pointer}` })));
      return v;
    },
  };
}

// ---- generation -------------------------------------------------------------------------------

/** Values the generator uses for strings of a format (URIs point at a closed local port: no outbound call). */
export interface GeneratorOptions {
  /** Ids a uuid property of this name may take besides random ones (existing resources of the tenant). */
  knownIds?: Record<string, string[]>;
  /** Cap of $ref recursion (OTLP AnyValue nests itself). */
  maxDepth?: number;
  /** Only required properties, no nulls for nullable ones: the request most likely to pass undocumented rules. */
  minimal?: boolean;
}

/** The contracts' uuid is a pattern, not a format: recognized so that generated ids can be the tenant's own. */
const UUID_PATTERN = /^\^\[0-9a-fA-F\]\{8\}-/;
const safeText = fc.string({ unit: 'grapheme-ascii', maxLength: 24 });
const isoDate = fc.date({ min: new Date('2001-01-01T00:00:00Z'), max: new Date('2035-12-31T23:59:59Z'), noInvalidDate: true }).map((d) => d.toISOString());
const jsonLeaf = fc.oneof(safeText, fc.integer({ min: -1e6, max: 1e6 }), fc.boolean(), fc.constant(null), fc.double({ min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true }));
/** Free-form JSON (schema {}): small, printable. */
export const freeJson: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof({ depthSize: 'small', withCrossShrink: true }, jsonLeaf, fc.array(tie('v'), { maxLength: 3 }), fc.dictionary(fc.string({ unit: fc.constantFrom(...'abcdefgh_'), minLength: 1, maxLength: 8 }), tie('v'), { maxKeys: 3 })),
})).v;

/**
 * The contracts document timestamps as `string | number` (ISO text or epoch ms, parsed by the service), without
 * a format; a property named like a time is generated, and broken, as a date-time.
 */
const TIME_NAME = /(_time|_at|^as_of|^timestamp)$/;
const isTimeLike = (name: string | number | undefined, s: JsonSchema) =>
  typeof name === 'string' && TIME_NAME.test(name) && !s.enum && !s.format && (isType(s, 'string') || s.nullable === true && isType(s, 'string'));
const timeArbitrary = (s: JsonSchema) => (s.nullable ? fc.option(isoDate, { nil: null }) : isoDate) as fc.Arbitrary<unknown>;

function typesOf(s: JsonSchema): string[] {
  if (Array.isArray(s.type)) return s.type as string[];
  if (typeof s.type === 'string') return [s.type];
  if (s.properties || s.additionalProperties !== undefined) return ['object'];
  if (s.items) return ['array'];
  return [];
}

const isFreeForm = (s: JsonSchema) => typesOf(s).length === 0 && !s.anyOf && !s.oneOf && !s.enum && !('const' in s);
/** An object with open keys of a given value schema (a record: metadata, extra, inputs...). */
const isRecord = (s: JsonSchema): boolean =>
  (typesOf(s).includes('object') && !s.properties && (s.additionalProperties === true || (typeof s.additionalProperties === 'object' && s.additionalProperties !== null))) ||
  Boolean(((s.anyOf ?? s.oneOf) as JsonSchema[] | undefined)?.some(isRecord));
const isType = (s: JsonSchema, t: string) => typesOf(s).includes(t) || Boolean( ((s.anyOf ?? s.oneOf) as JsonSchema[] | undefined)?.some((a) => typesOf(a).includes(t)));

function mergeAllOf(doc: unknown, s: JsonSchema): JsonSchema {
  const parts = (s.allOf as unknown[]).map((p) => deref(doc, p));
  const { allOf: _allOf, ...rest } = s;
  const merged: JsonSchema = { ...rest };
  for (const p of parts) {
    for (const [k, v] of Object.entries(p)) {
      if (k === 'properties') merged.properties = { ...(merged.properties as JsonSchema), ...(v as JsonSchema) };
      else if (k === 'required') merged.required = [...((merged.required as string[]) ?? []), ...(v as string[])];
      else if (!(k in merged)) merged[k] = v;
    }
  }
  return merged;
}

/** A fast-check arbitrary of values valid for a schema (the keywords the documents use). */
export function schemaArbitrary(doc: unknown, schema: unknown, opts: GeneratorOptions = {}, depth = 0, name?: string): fc.Arbitrary<unknown> {
  const maxDepth = opts.maxDepth ?? 4;
  let s = deref(doc, schema);
  if (Array.isArray(s.allOf)) s = mergeAllOf(doc, s);
  if (s.nullable === true && !opts.minimal) {
    const { nullable: _n, ...inner } = s;
    return fc.oneof({ weight: 4, arbitrary: schemaArbitrary(doc, inner, opts, depth, name) }, { weight: 1, arbitrary: fc.constant(null) });
  }
  if ('const' in s) return fc.constant(s.const);
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  const alts = (s.anyOf ?? s.oneOf) as unknown[] | undefined;
  if (alts) return fc.oneof(...alts.map((a) => schemaArbitrary(doc, a, opts, depth + 1, name)));
  const types = typesOf(s);
  if (types.length === 0) return freeJson;
  if (types.length > 1) return fc.oneof(...types.map((t) => schemaArbitrary(doc, { ...s, type: t }, opts, depth, name)));
  const min = (k: string) => (typeof s[k] === 'number' ? (s[k] as number) : undefined);
  switch (types[0]) {
    case 'string': {
      const minLength = min('minLength') ?? 0;
      const maxLength = Math.max(minLength, Math.min(min('maxLength') ?? 24, 64));
      if (s.format === 'uuid' || (typeof s.pattern === 'string' && UUID_PATTERN.test(s.pattern))) {
        const known = name === undefined ? undefined : opts.knownIds?.[name];
        return known?.length ? fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...known) }, { weight: 1, arbitrary: fc.uuid({ version: 4 }) }) : fc.uuid({ version: 4 });
      }
      if (s.format === 'date-time') return isoDate;
      if (s.format === 'date') return isoDate.map((d) => d.slice(0, 10));
      if (s.format === 'email') return fc.stringMatching(/^[a-z]{1,10}$/).map((u) => `${u}@example.com`);
      if (s.format === 'uri' || s.format === 'url') return fc.stringMatching(/^[a-z]{1,8}$/).map((p) => `http://127.0.0.1:9/${p}`);
      if (typeof s.pattern === 'string') {
        return fc.stringMatching(new RegExp(s.pattern as string)).filter((v) => v.length >= minLength && v.length <= (min('maxLength') ?? Infinity));
      }
      return fc.string({ unit: 'grapheme-ascii', minLength, maxLength });
    }
    case 'integer':
    case 'number': {
      const lo = Math.max(min('minimum') ?? -1e6, -1e9) + (s.exclusiveMinimum === true ? 1 : 0);
      const hi = Math.min(min('maximum') ?? 1e6, 1e9) - (s.exclusiveMaximum === true ? 1 : 0);
      if (types[0] === 'integer') return fc.integer({ min: Math.ceil(lo), max: Math.floor(hi) });
      return fc.double({ min: lo, max: hi, noNaN: true, noDefaultInfinity: true }).map((v) => (Object.is(v, -0) ? 0 : v));
    }
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const minLength = min('minItems') ?? 0;
      const maxLength = depth >= maxDepth ? minLength : Math.max(minLength, Math.min(min('maxItems') ?? 3, 3));
      return fc.array(schemaArbitrary(doc, s.items ?? {}, opts, depth + 1, name), { minLength, maxLength });
    }
    case 'object': {
      const props = (s.properties ?? {}) as Record<string, unknown>;
      const required = new Set((s.required as string[]) ?? []);
      // Past the depth cap only required properties are generated, so recursive schemas end.
      // A property whose schema is `not: {}` may never be sent (fields a contract forbids).
      const never = (k: string) => {
        const n = deref(doc, props[k]).not;
        return n !== undefined && typeof n === 'object' && n !== null && Object.keys(n).length === 0;
      };
      const keys = Object.keys(props).filter((k) => !never(k) && (required.has(k) || (depth < maxDepth && !opts.minimal)));
      const record = fc.record(Object.fromEntries(keys.map((k) => [k, isTimeLike(k, deref(doc, props[k])) ? timeArbitrary(deref(doc, props[k])) : schemaArbitrary(doc, props[k], opts, depth + 1, k)])), {
        requiredKeys: keys.filter((k) => required.has(k)),
      });
      const extra = s.additionalProperties;
      if (extra === false || extra === undefined || depth >= maxDepth || opts.minimal) return record;
      const valueArb = extra === true ? freeJson : schemaArbitrary(doc, extra, opts, depth + 1);
      const extraKeys = fc.string({ unit: fc.constantFrom(...'xyz_'), minLength: 1, maxLength: 6 }).filter((k) => !(k in props));
      return fc.tuple(record, fc.dictionary(extraKeys, valueArb, { maxKeys: 2 })).map(([r, d]) => ({ ...d, ...r }));
    }
    default:
      return freeJson;
  }
}

// ---- invalid inputs ---------------------------------------------------------------------------

/** The kinds of bad input the fuzz suite sends; each request it makes is labelled with one. */
export type InvalidClass =
  | 'wrong-type'
  | 'missing-required'
  | 'extra-property'
  | 'huge-string'
  | 'deep-nesting'
  | 'nul'
  | 'lone-surrogate'
  | 'huge-number'
  | 'bad-timestamp'
  | 'not-json';

/** Classes whose body breaks the documented schema: a 2xx for them means the document is wrong. */
export const SCHEMA_BREAKING: ReadonlySet<InvalidClass> = new Set(['wrong-type', 'missing-required', 'extra-property', 'not-json']);

export const HUGE_STRING_BYTES = 1024 * 1024;
export const DEEP_NESTING_LEVELS = 5_000;
export const BAD_TIMESTAMPS = ['2024-02-30T00:00:00Z', '2024-01-01T25:00:00Z', '0000-01-01T00:00:00Z', '2024-13-01T00:00:00Z'];
export const HUGE_NUMBERS = ['1e400', '-1e400', '18446744073709551616', '1e308'];

/** A JSON text nesting arrays `levels` deep. */
export const deepJson = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);

type Slot = { path: (string | number)[]; schema: JsonSchema };

/** Where in a generated value each schema applies (object properties and array items), depth-first. */
function slotsOf(doc: unknown, schema: unknown, value: unknown, path: (string | number)[] = [], out: Slot[] = [], depth = 0): Slot[] {
  let s = deref(doc, schema);
  if (Array.isArray(s.allOf)) s = mergeAllOf(doc, s);
  out.push({ path, schema: s });
  if (depth > 8 || value === null || typeof value !== 'object') return out;
  if (Array.isArray(value)) {
    value.forEach((v, i) => slotsOf(doc, s.items ?? {}, v, [...path, i], out, depth + 1));
    return out;
  }
  const props = (s.properties ?? {}) as Record<string, unknown>;
  for (const [k, v] of Object.entries(value)) {
    const sub = props[k] ?? (typeof s.additionalProperties === 'object' ? s.additionalProperties : {});
    slotsOf(doc, sub, v, [...path, k], out, depth + 1);
  }
  return out;
}

function setAt(value: unknown, path: (string | number)[], next: unknown): unknown {
  if (path.length === 0) return next;
  const copy = (Array.isArray(value) ? [...value] : { ...(value as object) }) as Record<string | number, unknown>;
  copy[path[0]] = setAt(copy[path[0]], path.slice(1), next);
  return copy;
}


/**
 * A JSON text of the invalid class built from a valid value, or null when the schema gives the class
 * no place (no required property to drop, no closed object to add to...). `pick` chooses among places.
 */
export function invalidBody(doc: unknown, schema: JsonSchema, valid: unknown, cls: InvalidClass, pick: number): string | null {
  const slots = slotsOf(doc, schema, valid);
  const choose = <T>(xs: T[]): T | null => (xs.length ? xs[Math.abs(pick) % xs.length] : null);
  const marker = '"__fuzz_raw__"';
  const withRaw = (path: (string | number)[], raw: string) => JSON.stringify(setAt(valid, path, '__fuzz_raw__')).replace(marker, raw);
  // A place for an arbitrary value: a free-form slot (metadata, inputs, extra...), else an extra key of an object.
  // A place for an arbitrary value, where the service keeps one: a free-form value present (metadata, inputs...),
  // a key of a record present, such a property absent from the value, else an extra key of an open object.
  const freeSlot = (): (string | number)[] | null => {
    const free = choose(slots.filter((sl) => sl.path.length > 0 && isFreeForm(sl.schema)));
    if (free) return free.path;
    const record = choose(slots.filter((sl) => isRecord(sl.schema)));
    if (record) return [...record.path, 'fuzz_extra'];
    const absent: (string | number)[][] = [];
    for (const sl of slots) {
      const present = sl.path.reduce<unknown>((o, p) => (o as Record<string | number, unknown>)?.[p], valid);
      if (present === null || typeof present !== 'object' || Array.isArray(present)) continue;
      for (const [k, sub] of Object.entries((sl.schema.properties ?? {}) as Record<string, unknown>)) {
        if (k in present) continue;
        const d = deref(doc, sub);
        if (isFreeForm(d)) absent.push([...sl.path, k]);
        else if (isRecord(d)) absent.push([...sl.path, k, 'fuzz_extra']);
      }
    }
    const placed = choose(absent);
    if (placed) return placed;
    const obj = choose(slots.filter((sl) => typesOf(sl.schema).includes('object') && sl.schema.additionalProperties !== false));
    return obj ? [...obj.path, 'fuzz_extra'] : null;
  };
  switch (cls) {
    case 'not-json':
      return '{"a": [1, 2,';
    case 'wrong-type': {
      const typed = choose(slots.filter((sl) => typesOf(sl.schema).length > 0 && !sl.schema.nullable && !sl.schema.anyOf));
      if (!typed) return null;
      const t = typesOf(typed.schema);
      const wrong = t.includes('string') ? 12345 : t.includes('object') ? 'not an object' : t.includes('array') ? { not: 'an array' } : ['wrong'];
      return JSON.stringify(setAt(valid, typed.path, wrong));
    }
    case 'missing-required': {
      const holders = slots.filter((sl) => ((sl.schema.required as string[]) ?? []).some((k) => valid !== null && sl.path.reduce<unknown>((o, p) => (o as never)?.[p], valid) !== undefined && k));
      const holder = choose(holders);
      if (!holder) return null;
      const key = choose(holder.schema.required as string[])!;
      const obj = holder.path.reduce<unknown>((o, p) => (o as Record<string | number, unknown>)[p], valid);
      if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return null;
      const { [key]: _dropped, ...rest } = obj as Record<string, unknown>;
      return JSON.stringify(setAt(valid, holder.path, rest));
    }
    case 'extra-property': {
      const closed = choose(slots.filter((sl) => sl.schema.additionalProperties === false));
      return closed ? JSON.stringify(setAt(valid, [...closed.path, 'fuzz_unknown_field'], 1)) : null;
    }
    case 'huge-string': {
      const str = choose(slots.filter((sl) => sl.path.length > 0 && isType(sl.schema, 'string') && !sl.schema.format && !sl.schema.enum));
      const at = str?.path ?? freeSlot();
      return at ? JSON.stringify(setAt(valid, at, 'x'.repeat(HUGE_STRING_BYTES))) : null;
    }
    case 'deep-nesting': {
      const at = freeSlot();
      return at ? withRaw(at, deepJson(DEEP_NESTING_LEVELS)) : null;
    }
    case 'nul':
    case 'lone-surrogate': {
      const bad = cls === 'nul' ? 'a\u0000b' : 'a\ud800b';
      // Half the time in a string value, half in a key of free-form JSON.
      const str = pick % 2 === 0 ? choose(slots.filter((sl) => sl.path.length > 0 && isType(sl.schema, 'string') && !sl.schema.format && !sl.schema.enum && !sl.schema.pattern)) : null;
      if (str) return JSON.stringify(setAt(valid, str.path, bad));
      const at = freeSlot();
      return at ? JSON.stringify(setAt(valid, at, { [bad]: bad })) : null;
    }
    case 'huge-number': {
      const num = choose(slots.filter((sl) => sl.path.length > 0 && (isType(sl.schema, 'number') || isType(sl.schema, 'integer'))));
      const at = num?.path ?? freeSlot();
      return at ? withRaw(at, HUGE_NUMBERS[Math.abs(pick) % HUGE_NUMBERS.length]) : null;
    }
    case 'bad-timestamp': {
      const ts = choose(slots.filter((sl) => sl.path.length > 0 && (sl.schema.format === 'date-time' || isTimeLike(sl.path.at(-1), sl.schema))));
      return ts ? JSON.stringify(setAt(valid, ts.path, BAD_TIMESTAMPS[Math.abs(pick) % BAD_TIMESTAMPS.length])) : null;
    }
  }
}
