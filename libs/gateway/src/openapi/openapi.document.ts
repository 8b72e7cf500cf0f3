import { z } from 'zod';
import { ROUTES } from './openapi.routes';

type Json = Record<string, unknown>;

function schemaOf(schema: z.ZodTypeAny, io: 'input' | 'output'): Json {
  const s = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'openapi-3.0' }) as Json;
  delete s.$schema;
  return s;
}

const intHeader = (description: string): Json => ({ description, schema: { type: 'integer', minimum: 0 } });

/**
 * The answer of the rate limiter (every route but the health probes is counted): the spec's {detail}
 * body, Retry-After, and the RateLimit-* headers of draft-ietf-httpapi-ratelimit-headers, one per field.
 */
const TOO_MANY_REQUESTS: Json = {
  description: 'Rate limit exceeded: retry after the number of seconds in Retry-After',
  headers: {
    'Retry-After': intHeader('Seconds until the window resets and the request may be retried'),
    'RateLimit-Limit': intHeader("Requests allowed in the rule's window"),
    'RateLimit-Remaining': intHeader('Requests left in the current window (0 when limited)'),
    'RateLimit-Reset': intHeader('Seconds until the current window resets'),
    'RateLimit-Policy': { description: 'The rule\'s quota as "<limit>;w=<window seconds>"', schema: { type: 'string', example: '1000;w=10' } },
  },
  content: { 'application/json': { schema: schemaOf(z.object({ detail: z.string() }), 'output') } },
};

/** The gateway's OpenAPI document, generated from the zod contracts (committed; CI checks drift). */
export function buildOpenApiDocument(version: string): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const r of ROUTES) {
    const params = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }));
    const queryParams = r.query
      ? Object.entries(r.query.shape).map(([name, s]) => ({ name, in: 'query', required: false, schema: schemaOf(s as z.ZodTypeAny, 'input') }))
      : [];
    const op: Json = {
      summary: r.summary,
      tags: [r.tag],
      operationId: `${r.method}_${r.path.replace(/^\/api\/v1/, '').replace(/[{}]/g, '').replace(/\W+/g, '_').replace(/^_|_$/g, '')}`,
      parameters: [...params, ...queryParams],
      responses: Object.fromEntries(
        Object.entries(r.responses).map(([status, s]) => [
          status,
          s ? { description: `HTTP ${status}`, content: { 'application/json': { schema: schemaOf(s, 'output') } } } : { description: `HTTP ${status}` },
        ]),
      ),
    };
    (op.responses as Json)['429'] = { $ref: '#/components/responses/TooManyRequests' };
    // X-API-Key (API key, personal access token, service key) or a session bearer token.
    if (!r.public) op.security = [{ ApiKey: [] }, { Bearer: [] }];
    if (r.body) op.requestBody = { required: true, content: { 'application/json': { schema: schemaOf(r.body, 'input') } } };
    if (r.bodyType === 'multipart') {
      op.requestBody = {
        required: true,
        content: {
          'multipart/form-data': {
            schema: {
              type: 'object',
              description:
                'Parts: post.<run_id>, post.<run_id>.<inputs|outputs|events|extra|error|serialized>, patch.<run_id>[.<field>], attachment.<run_id>.<name>',
              additionalProperties: true,
            },
          },
        },
      };
    }
    (paths[r.path] ??= {})[r.method] = op;
  }
  return {
    openapi: '3.0.3',
    info: { title: 'Tracehouse API', version, description: 'Tracing, evaluation and deployment service.' },
    servers: [{ url: '/' }],
    components: {
      responses: { TooManyRequests: TOO_MANY_REQUESTS },
      securitySchemes: {
        ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
        TenantId: { type: 'apiKey', in: 'header', name: 'X-Tenant-Id' },
        OrganizationId: { type: 'apiKey', in: 'header', name: 'X-Organization-Id' },
        Bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      },
    },
    paths,
  };
}
