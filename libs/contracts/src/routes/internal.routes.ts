import { z } from 'zod';
import { errorBodySchema } from '../common.schema';
import type { RouteSpec } from './route';

const document = { 200: z.object({}).passthrough() };

/** Routes no published document describes, each for the reason in its summary. */
export const INTERNAL_ROUTES: RouteSpec[] = [
  { method: 'get', path: '/openapi.json', service: 'gateway', summary: "The gateway's OpenAPI document (API_ROUTES)", responses: document, public: true },
  { method: 'get', path: '/v2/openapi.json', service: 'control-plane', summary: "The control plane's OpenAPI document (CONTROL_PLANE_ROUTES)", responses: document, public: true },
  {
    method: 'post',
    path: '/deployments/{deployment_id}/upload-url',
    service: 'control-plane',
    summary: 'POST /v2/deployments/{deployment_id}/upload-url without its version segment (documented there)',
    responses: { 200: null, 404: errorBodySchema },
  },
  {
    method: 'get',
    path: '/public/run-attachments/{tenant_id}/{run_id}/{name}',
    service: 'query',
    summary: "A run attachment's signed download URL (expires, signature), as a run read gives it",
    responses: { 200: null, 404: errorBodySchema },
    public: true,
  },
  {
    method: 'post',
    path: '/internal/projects/resolve',
    service: 'query',
    summary: 'Resolves a project name for ingest, service to service (signed identity); never through the gateway',
    responses: { 200: null },
    internal: true,
  },
];
