import fc from 'fast-check';
import { buildControlPlaneOpenApi } from '@th/control-plane';
import { buildOpenApiDocument } from '@th/gateway';
import { SCHEMA_BREAKING, createDocumentValidator, invalidBody, listOperations, schemaArbitrary, type OpenApiDocument } from '@th/testing';

/**
 * The fuzz suite's generator against the documents it is driven by: what it generates as valid passes the
 * document's own schema (ajv), and what it generates as schema-breaking fails it. Without this, a generator bug
 * would read as a service bug or hide one.
 */
const DOCS: [string, OpenApiDocument][] = [
  ['/openapi.json', buildOpenApiDocument('0.0.0') as unknown as OpenApiDocument],
  ['/v2/openapi.json', buildControlPlaneOpenApi() as unknown as OpenApiDocument],
];

describe.each(DOCS)('the generator driven by %s', (_name, doc) => {
  const validator = createDocumentValidator(doc);
  const bodies = listOperations(doc).filter((op) => op.body?.contentType === 'application/json');

  it('has JSON bodies to generate', () => {
    expect(bodies.length).toBeGreaterThan(2);
  });

  it('generates request bodies every one of which the document accepts', () => {
    for (const op of bodies) {
      const validate = validator.compile(op.body!.pointer);
      fc.assert(
        fc.property(schemaArbitrary(doc, op.body!.schema), (value) => {
          if (!validate(value)) throw new Error(`${op.method} ${op.path}: ${JSON.stringify(validate.errors)} for ${JSON.stringify(value).slice(0, 300)}`);
        }),
        { seed: 27, numRuns: 20 },
      );
    }
  });

  it('makes schema-breaking bodies the document refuses', () => {
    let made = 0;
    for (const op of bodies) {
      const validate = validator.compile(op.body!.pointer);
      const [valid] = fc.sample(schemaArbitrary(doc, op.body!.schema), { seed: 27, numRuns: 1 });
      for (const cls of SCHEMA_BREAKING) {
        if (cls === 'not-json') continue;
        for (let pick = 0; pick < 4; pick++) {
          const text = invalidBody(doc, op.body!.schema, valid, cls, pick);
          if (text === null) continue;
          made++;
          expect({ op: `${op.method} ${op.path}`, cls, body: text.slice(0, 300), valid: validate(JSON.parse(text)) }).toMatchObject({ valid: false });
        }
      }
    }
    expect(made).toBeGreaterThan(bodies.length);
  });
});
