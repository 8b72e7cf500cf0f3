import { z } from 'zod';

type Json = Record<string, unknown>;

/**
 * OpenAPI 3.0.3 reads `nullable` only beside `type`, and an `enum` must list null itself: zod's `{anyOf, nullable}`
 * and `{enum, nullable}` would document null as refused. The null moves onto each typed alternative and into the
 * enum; on a schema without type or alternatives (any value) it is dropped, since such a schema admits null already.
 */
function typedNullable(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(typedNullable);
  if (node === null || typeof node !== 'object') return node;
  const out = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, typedNullable(v)])) as Json;
  if (out.nullable !== true) return out;
  if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...(out.enum as unknown[]), null];
  if (out.type !== undefined) return out;
  delete out.nullable;
  const alts = out.anyOf as Json[] | undefined;
  if (!alts) return out;
  if (!alts.every((a) => a.type !== undefined)) throw new Error(`A nullable union of untyped schemas cannot be documented: ${JSON.stringify(out)}`);
  out.anyOf = alts.map((a) => typedNullable({ ...a, nullable: true }));
  return out;
}

/**
 * The OpenAPI 3.0 schema of a contract, for a document's request (`input`) or response (`output`) side. Schemas
 * named with `.meta({ id })` (the recursive ones must be) come out of zod as local `definitions`, which a schema
 * embedded in a document cannot keep: they move to the document's `components.schemas` and their references
 * follow, so every `$ref` resolves from the document's root.
 */
export function openApiSchemaOf(schema: z.ZodTypeAny, io: 'input' | 'output', components?: Record<string, Json>): Json {
  const s = typedNullable(z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'openapi-3.0' })) as Json;
  delete s.$schema;
  const defs = s.definitions as Record<string, Json> | undefined;
  if (!defs) return s;
  delete s.definitions;
  for (const [name, def] of Object.entries(defs)) {
    if (name.startsWith('__schema') || !components) throw new Error(`A recursive schema must be named with .meta({ id }) to be documented (${name})`);
    const moved = JSON.stringify(def).replaceAll('"#/definitions/', '"#/components/schemas/');
    if (components[name] && JSON.stringify(components[name]) !== moved) throw new Error(`Two different schemas are named ${name}`);
    components[name] = JSON.parse(moved) as Json;
  }
  return JSON.parse(JSON.stringify(s).replaceAll('"#/definitions/', '"#/components/schemas/')) as Json;
}
