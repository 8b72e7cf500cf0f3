import { z } from 'zod';
import { CONTROL_PLANE_ROUTES, documentedSummary, openApiPath, openApiSchemaOf, validationErrorSchema } from '@th/contracts';

type Json = Record<string, unknown>;

const detail = z.object({ detail: z.string() });
const invalid = z.object({ detail: z.array(validationErrorSchema) });

const schemaOf = openApiSchemaOf;

const genericResponse = (description: string, schema: z.ZodTypeAny): Json => ({ description, content: { 'application/json': { schema: schemaOf(schema, 'output') } } });

/** The control plane's own OpenAPI document (API version 0.1.0; every path under its version segment). */
export function buildControlPlaneOpenApi(): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const r of CONTROL_PLANE_ROUTES) {
    const path = openApiPath(r.path);
    const params = [...path.matchAll(/\{(\w+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    const query = r.query ? Object.entries(r.query.shape).map(([name, s]) => ({ name, in: 'query', required: !(s as z.ZodTypeAny).isOptional(), schema: schemaOf(s as z.ZodTypeAny, 'input') })) : [];
    const op: Json = {
      summary: documentedSummary(r),
      operationId: `${r.method}_${path.replace(/[{}]/g, '').replace(/\W+/g, '_').replace(/^_|_$/g, '')}`,
      parameters: [...params, ...query],
      responses: Object.fromEntries(
        Object.entries(r.responses).map(([status, s]) => [status, s ? { description: `HTTP ${status}`, content: { 'application/json': { schema: schemaOf(s, 'output') } } } : { description: `HTTP ${status}` }]),
      ),
    };
    if (r.body) op.requestBody = { required: true, content: { 'application/json': { schema: schemaOf(r.body, 'input') } } };
    if (!r.public) op.security = [{ ApiKey: [] }, { TenantId: [] }, { Bearer: [] }];
    // Answers any operation may give, documented once (see components.responses).
    const responses = op.responses as Json;
    responses['429'] ??= { $ref: '#/components/responses/TooManyRequests' };
    if (!r.public) {
      responses['401'] ??= { $ref: '#/components/responses/Unauthorized' };
      responses['403'] ??= { $ref: '#/components/responses/Forbidden' };
    }
    if (params.length || query.length || r.body) responses['422'] ??= { $ref: '#/components/responses/ValidationFailed' };
    (paths[path] ??= {})[r.method] = op;
  }
  return {
    openapi: '3.0.3',
    info: { title: 'Tracehouse deployment control plane', version: '0.1.0' },
    paths,
    components: {
      responses: {
        TooManyRequests: genericResponse('Rate limit exceeded: retry after the number of seconds in Retry-After', detail),
        Unauthorized: genericResponse('Missing, unknown, expired or revoked credentials', detail),
        Forbidden: genericResponse('The credentials do not allow this operation here', detail),
        ValidationFailed: genericResponse('Invalid parameters or body: one {loc, msg, type} per problem', invalid),
      },
      securitySchemes: {
        ApiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
        TenantId: { type: 'apiKey', in: 'header', name: 'X-Tenant-Id' },
        Bearer: { type: 'http', scheme: 'bearer' },
      },
    },
  };
}
