import { z } from 'zod';
import {
  deploymentCreateRequestSchema,
  deploymentListQuerySchema,
  deploymentListResponseSchema,
  deploymentPatchRequestSchema,
  deploymentSchema,
  gitHostInstallResponseSchema,
  gitPushEventSchema,
  gitPushResponseSchema,
  listenerCreateRequestSchema,
  listenerListQuerySchema,
  listenerListResponseSchema,
  listenerSchema,
  openApiSchemaOf,
  revisionListQuerySchema,
  revisionListResponseSchema,
  revisionSchema,
  uploadUrlResponseSchema,
  validationErrorSchema,
} from '@th/contracts';

type Json = Record<string, unknown>;
interface Route {
  method: 'get' | 'post' | 'patch' | 'delete' | 'put';
  path: string;
  summary: string;
  body?: z.ZodTypeAny;
  query?: z.ZodObject<z.ZodRawShape>;
  responses: Record<number, z.ZodTypeAny | null>;
  public?: boolean;
}

const detail = z.object({ detail: z.string() });
const invalid = z.object({ detail: z.array(validationErrorSchema) });

export const CONTROL_PLANE_ROUTES: Route[] = [
  { method: 'post', path: '/v2/deployments', summary: 'Create a deployment', body: deploymentCreateRequestSchema, responses: { 201: deploymentSchema, 400: detail, 422: invalid } },
  { method: 'get', path: '/v2/deployments', summary: 'List deployments', query: deploymentListQuerySchema, responses: { 200: deploymentListResponseSchema, 422: invalid } },
  { method: 'get', path: '/v2/deployments/{deployment_id}', summary: 'Read a deployment', responses: { 200: deploymentSchema, 404: detail } },
  { method: 'patch', path: '/v2/deployments/{deployment_id}', summary: 'Update a deployment', body: deploymentPatchRequestSchema, responses: { 200: deploymentSchema, 400: detail, 404: detail, 422: invalid } },
  { method: 'delete', path: '/v2/deployments/{deployment_id}', summary: 'Delete a deployment (passes through AWAITING_DELETE)', responses: { 202: deploymentSchema, 404: detail } },
  { method: 'get', path: '/v2/deployments/{deployment_id}/revisions', summary: 'List revisions, newest first', query: revisionListQuerySchema, responses: { 200: revisionListResponseSchema, 404: detail } },
  { method: 'get', path: '/v2/deployments/{deployment_id}/revisions/{revision_id}', summary: 'Read a revision', responses: { 200: revisionSchema, 404: detail } },
  { method: 'post', path: '/v2/deployments/{deployment_id}/upload-url', summary: 'Issue an object path and upload URL for a source tarball (also served without /v2)', responses: { 200: uploadUrlResponseSchema, 400: detail, 404: detail } },
  { method: 'put', path: '/v2/uploads/{object_path}', summary: 'Upload a gzipped source tarball to an issued URL', responses: { 200: z.object({ object_path: z.string() }), 400: detail, 404: detail, 413: detail }, public: true },
  { method: 'get', path: '/v2/listeners', summary: 'List listeners', query: listenerListQuerySchema, responses: { 200: listenerListResponseSchema } },
  { method: 'post', path: '/v2/listeners', summary: 'Register a listener', body: listenerCreateRequestSchema, responses: { 201: listenerSchema, 400: detail, 422: invalid } },
  { method: 'get', path: '/v1/integrations/git_host/install', summary: 'The git host integration id (created on first call)', responses: { 200: gitHostInstallResponseSchema } },
  { method: 'post', path: '/v1/integrations/git_host/{integration_id}/webhook', summary: 'Push webhook (X-Hub-Signature-256)', body: gitPushEventSchema, responses: { 200: gitPushResponseSchema, 401: detail, 404: detail }, public: true },
];

const schemaOf = openApiSchemaOf;

const genericResponse = (description: string, schema: z.ZodTypeAny): Json => ({ description, content: { 'application/json': { schema: schemaOf(schema, 'output') } } });

/** The control plane's own OpenAPI document (API version 0.1.0; every path under its version segment). */
export function buildControlPlaneOpenApi(): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const r of CONTROL_PLANE_ROUTES) {
    const params = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    const query = r.query ? Object.entries(r.query.shape).map(([name, s]) => ({ name, in: 'query', required: !(s as z.ZodTypeAny).isOptional(), schema: schemaOf(s as z.ZodTypeAny, 'input') })) : [];
    const op: Json = {
      summary: r.summary,
      operationId: `${r.method}_${r.path.replace(/[{}]/g, '').replace(/\W+/g, '_').replace(/^_|_$/g, '')}`,
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
    (paths[r.path] ??= {})[r.method] = op;
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
