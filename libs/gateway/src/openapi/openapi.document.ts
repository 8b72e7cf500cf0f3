import { z } from 'zod';
import { API_ROUTES, errorBodySchema, httpValidationErrorSchema, documentedSummary, openApiPath, openApiSchemaOf } from '@th/contracts';

type Json = Record<string, unknown>;

const schemaOf = openApiSchemaOf;

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

const errorResponse = (description: string, schema: z.ZodTypeAny): Json => ({ description, content: { 'application/json': { schema: schemaOf(schema, 'output') } } });

/**
 * Answers any operation may give, documented once: 401 and 403 on every authenticated operation (missing or bad
 * credentials, a tenant header the key may not use, a missing permission), 422 on every operation with
 * parameters or a body (the spec's HTTPValidationError), 429 on every operation (the rate limiter).
 */
const GENERIC_RESPONSES: Json = {
  TooManyRequests: TOO_MANY_REQUESTS,
  Unauthorized: errorResponse('Missing, unknown, expired or revoked credentials', errorBodySchema),
  Forbidden: errorResponse('The credentials do not allow this operation here (permission, workspace or organization)', errorBodySchema),
  ValidationFailed: errorResponse('Invalid parameters or body: one {loc, msg, type} per problem', httpValidationErrorSchema),
};
const genericRef = (name: keyof typeof GENERIC_RESPONSES & string): Json => ({ $ref: `#/components/responses/${name}` });

/** The gateway's OpenAPI document, generated from the zod contracts (committed; CI checks drift). */
export function buildOpenApiDocument(version: string): Json {
  const paths: Record<string, Record<string, Json>> = {};
  const schemas: Record<string, Json> = {};
  for (const r of API_ROUTES) {
    const path = openApiPath(r.path);
    const params = [...path.matchAll(/\{(\w+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }));
    const queryParams = r.query
      ? Object.entries(r.query.shape).map(([name, s]) => ({ name, in: 'query', required: !(s as z.ZodTypeAny).isOptional(), schema: schemaOf(s as z.ZodTypeAny, 'input', schemas) }))
      : [];
    const op: Json = {
      summary: documentedSummary(r),
      tags: [r.tag],
      operationId: `${r.method}_${path.replace(/^\/api\/v1/, '').replace(/[{}]/g, '').replace(/\W+/g, '_').replace(/^_|_$/g, '')}`,
      parameters: [...params, ...queryParams],
      responses: Object.fromEntries(
        Object.entries(r.responses).map(([status, s]) => [
          status,
          s
            ? { description: `HTTP ${status}`, content: { [Number(status) < 300 ? (r.responseType ?? 'application/json') : 'application/json']: { schema: schemaOf(s, 'output', schemas) } } }
            : { description: `HTTP ${status}` },
        ]),
      ),
    };
    const responses = op.responses as Json;
    responses['429'] = genericRef('TooManyRequests');
    if (!r.public) {
      responses['401'] ??= genericRef('Unauthorized');
      responses['403'] ??= genericRef('Forbidden');
    }
    if (params.length || queryParams.length || r.body || r.bodyType) responses['422'] ??= genericRef('ValidationFailed');
    // X-API-Key (API key, personal access token, service key) or a session bearer token.
    if (!r.public) op.security = [{ ApiKey: [] }, { Bearer: [] }];
    if (r.body) op.requestBody = { required: true, content: { 'application/json': { schema: schemaOf(r.body, 'input', schemas) } } };
    if (r.bodyType === 'multipart') {
      op.requestBody = {
        required: true,
        content: {
          'multipart/form-data': {
            schema: {
              type: 'object',
              description: r.parts ?? r.summary,
              additionalProperties: true,
            },
          },
        },
      };
    }
    (paths[path] ??= {})[r.method] = op;
  }
  return {
    openapi: '3.0.3',
    info: { title: 'Tracehouse API', version, description: 'Tracing, evaluation and deployment service.' },
    servers: [{ url: '/' }],
    components: {
      schemas,
      responses: GENERIC_RESPONSES,
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
