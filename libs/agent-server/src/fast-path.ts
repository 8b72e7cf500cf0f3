import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Logger, type INestApplication } from '@nestjs/common';
import { errorResponse, httpMetricsMiddleware, jsonDecodeError, JsonTooDeepError, jsonTooDeepItem, parseClientJson, setRouteTemplate } from '@th/platform';
import { AGENT_SERVICE } from './agent-service.token';
import { toRun } from './agent.repository';
import type { AgentService } from './agent.service';

type Listener = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * The three requests a client makes for every background run (POST /threads, POST
 * /threads/{id}/runs, GET /threads/{id}/runs/{run_id}/join) answered straight from node:http, in
 * front of Nest and Express, which answer everything else. Same service calls, same bodies, headers
 * (Content-Type, Content-Length, Content-Location) and error shapes as the controllers and the house
 * exception filter. Anything unusual (a query string, an encoded or compressed body, a chunked or
 * oversized body, a non-JSON content type, path prefixes other than /api and /api/v1, escapes in a
 * path) is left to the full pipeline, untouched.
 */
export function installFastPath(app: INestApplication, maxBodyBytes: number): void {
  const agents = app.get<AgentService>(AGENT_SERVICE, { strict: false });
  const server = app.getHttpServer() as Server;
  const fallbacks = server.listeners('request') as Listener[];
  if (fallbacks.length !== 1) return; // not the plain Express listener we know how to front
  const fallback = fallbacks[0]!;
  const logger = new Logger('http');
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const route = match(req, maxBodyBytes);
    if (route === null) return fallback(req, res);
    setRouteTemplate(req, TEMPLATES[route.kind]);
    httpMetricsMiddleware(req, res, () => serve(agents, req, res, route).catch((err: unknown) => fail(logger, res, err)));
  });
}

type Route = { kind: 'thread' } | { kind: 'run'; threadId: string } | { kind: 'join'; threadId: string; runId: string };

/** Each fast route's template, as its entry in AGENT_SERVER_ROUTES writes it (the metrics' route label). */
const TEMPLATES: Record<Route['kind'], string> = { thread: '/threads', run: '/threads/{thread_id}/runs', join: '/threads/{thread_id}/runs/{run_id}/join' };

const plainSegment = (s: string | undefined): s is string => s !== undefined && s !== '' && !s.includes('%');

function match(req: IncomingMessage, maxBodyBytes: number): Route | null {
  let url = req.url ?? '';
  if (url.includes('?')) return null;
  if (url.startsWith('/api/')) {
    if (url.startsWith('/api/v1/')) {
      if (url.startsWith('/api/v1/platform')) return null;
      url = url.slice('/api/v1'.length);
    } else if (url.startsWith('/api/v2')) return null;
    else url = url.slice('/api'.length);
  }
  if (!url.startsWith('/threads')) return null;
  const parts = url.split('/'); // ['', 'threads', ...]
  if (req.method === 'POST') {
    if (!bodyIsPlain(req, maxBodyBytes)) return null;
    if (parts.length === 2 && parts[1] === 'threads') return { kind: 'thread' };
    if (parts.length === 4 && parts[1] === 'threads' && parts[3] === 'runs' && plainSegment(parts[2])) return { kind: 'run', threadId: parts[2] };
    return null;
  }
  if (req.method === 'GET' && parts.length === 6 && parts[1] === 'threads' && parts[3] === 'runs' && parts[5] === 'join' && plainSegment(parts[2]) && plainSegment(parts[4])) {
    return { kind: 'join', threadId: parts[2], runId: parts[4] };
  }
  return null;
}

/** A body the house body reader would parse as JSON, with a declared length within the limit. */
function bodyIsPlain(req: IncomingMessage, maxBodyBytes: number): boolean {
  const h = req.headers;
  if (h['transfer-encoding'] !== undefined) return false;
  const encoding = h['content-encoding'];
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity' && encoding.trim() !== '') return false;
  const declared = Number(h['content-length'] ?? 0);
  if (!Number.isFinite(declared) || declared > maxBodyBytes) return false;
  const type = (h['content-type'] ?? '').toLowerCase();
  return type === '' || type.includes('json');
}

function readJson(req: IncomingMessage): Promise<{ ok: true; body: unknown } | { ok: false; error: unknown }> {
  if (Number(req.headers['content-length'] ?? 0) <= 0) {
    req.resume();
    return Promise.resolve({ ok: true, body: undefined });
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', reject);
    req.on('end', () => {
      const raw = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      if (raw.length === 0) return resolve({ ok: true, body: undefined });
      try {
        resolve({ ok: true, body: parseClientJson(raw.toString('utf8')) });
      } catch (err) {
        resolve({ ok: false, error: err instanceof JsonTooDeepError ? { detail: [jsonTooDeepItem(err, ['body', err.position])] } : jsonDecodeError(err) });
      }
    });
  });
}

async function serve(agents: AgentService, req: IncomingMessage, res: ServerResponse, route: Route): Promise<void> {
  if (route.kind === 'join') return send(res, 200, await agents.runs.join(route.threadId, route.runId));
  const parsed = await readJson(req);
  if (!parsed.ok) return send(res, 422, parsed.error);
  if (route.kind === 'thread') return send(res, 200, await agents.threads.createThread(parsed.body));
  const { run } = await agents.runs.createRun(route.threadId, parsed.body);
  res.setHeader('Content-Location', `/threads/${run.thread_id}/runs/${run.run_id}`);
  return send(res, 200, toRun(run));
}

/** As Express's res.json: the JSON text, its type and length. */
function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

/** As the house exception filter (the same errorResponse). */
function fail(logger: Logger, res: ServerResponse, exception: unknown): void {
  if (res.headersSent) return;
  const { status, body } = errorResponse(exception, logger);
  send(res, status, body);
}
