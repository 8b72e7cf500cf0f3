import { z } from 'zod';
import { deploymentCreateRequestSchema, deploymentListQuerySchema, deploymentListResponseSchema, deploymentPatchRequestSchema, deploymentSchema, gitHostInstallResponseSchema, gitPushEventSchema, gitPushResponseSchema, listenerCreateRequestSchema, listenerListQuerySchema, listenerListResponseSchema, listenerSchema, revisionListQuerySchema, revisionListResponseSchema, revisionSchema, uploadUrlResponseSchema } from '../control-plane.schema';
import { validationErrorSchema } from '../common.schema';
import { ownedBy, type RouteSpec } from './route';

const detail = z.object({ detail: z.string() });
const invalid = z.object({ detail: z.array(validationErrorSchema) });

/** The deployment control plane's routes: its own OpenAPI document (/v2/openapi.json). */
export const CONTROL_PLANE_ROUTES: RouteSpec[] = ownedBy('control-plane', [
  { method: 'post', path: '/v2/deployments', audit: { operation: 'create_deployment' }, summary: 'Create a deployment', body: deploymentCreateRequestSchema, responses: { 201: deploymentSchema, 400: detail, 422: invalid } },
  { method: 'get', path: '/v2/deployments', summary: 'List deployments', query: deploymentListQuerySchema, responses: { 200: deploymentListResponseSchema, 422: invalid } },
  { method: 'get', path: '/v2/deployments/{deployment_id}', summary: 'Read a deployment', responses: { 200: deploymentSchema, 404: detail } },
  { method: 'patch', path: '/v2/deployments/{deployment_id}', audit: { operation: 'update_deployment', resourceType: 'deployment', resourceParam: 'deployment_id' }, summary: 'Update a deployment', body: deploymentPatchRequestSchema, responses: { 200: deploymentSchema, 400: detail, 404: detail, 422: invalid } },
  { method: 'delete', path: '/v2/deployments/{deployment_id}', audit: { operation: 'delete_deployment', resourceType: 'deployment', resourceParam: 'deployment_id' }, summary: 'Delete a deployment (passes through AWAITING_DELETE)', responses: { 202: deploymentSchema, 404: detail } },
  { method: 'get', path: '/v2/deployments/{deployment_id}/revisions', summary: 'List revisions, newest first', query: revisionListQuerySchema, responses: { 200: revisionListResponseSchema, 404: detail } },
  { method: 'get', path: '/v2/deployments/{deployment_id}/revisions/{revision_id}', summary: 'Read a revision', responses: { 200: revisionSchema, 404: detail } },
  { method: 'post', path: '/v2/deployments/{deployment_id}/upload-url', summary: 'Issue an object path and upload URL for a source tarball (also served without /v2)', responses: { 200: uploadUrlResponseSchema, 400: detail, 404: detail } },
  { method: 'put', path: '/v2/uploads/{object_path*}', summary: 'Upload a gzipped source tarball to an issued URL', responses: { 200: z.object({ object_path: z.string() }), 400: detail, 404: detail, 413: detail }, public: true },
  { method: 'get', path: '/v2/listeners', summary: 'List listeners', query: listenerListQuerySchema, responses: { 200: listenerListResponseSchema } },
  { method: 'post', path: '/v2/listeners', summary: 'Register a listener', body: listenerCreateRequestSchema, responses: { 201: listenerSchema, 400: detail, 422: invalid } },
  { method: 'get', path: '/v1/integrations/git_host/install', summary: 'The git host integration id (created on first call)', responses: { 200: gitHostInstallResponseSchema } },
  { method: 'post', path: '/v1/integrations/git_host/{integration_id}/webhook', summary: 'Push webhook (X-Hub-Signature-256)', body: gitPushEventSchema, responses: { 200: gitPushResponseSchema, 401: detail, 404: detail }, public: true },
]);
