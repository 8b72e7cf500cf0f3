import { createReadStream, existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { NextFunction, Request, Response } from 'express';

/**
 * The app's pages may load scripts, styles, data and images from this origin only (no inline script,
 * no eval, no framing); `data:` images are the icon and inline pictures of runs; the worker that parses
 * large runs off the main thread is one of the app's files.
 */
export const WEB_CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "worker-src 'self'",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The paths that are the app's: its page for `/`, `/login` and everything under `/o/` (the SDK's links),
 * and its hashed files under `/assets/`. A fixed list, so no API route is ever shadowed.
 */
export function isWebAppPath(path: string): 'page' | 'asset' | null {
  if (path === '/' || path === '/login' || path === '/login/' || path === '/o' || path.startsWith('/o/')) return 'page';
  if (path.startsWith('/assets/')) return 'asset';
  return null;
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.json': 'application/json; charset=utf-8',
};
const ASSET_NAME = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;
/** Assets up to this size are kept compressed in memory (they are content-hashed: never stale). */
const CACHED_ASSET_BYTES = 4 * 1024 * 1024;
const CACHED_ASSETS = 128;

const securityHeaders = (res: Response) => {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'same-origin');
};

/**
 * Serves the built web app from `dir` (dist/web): the page for the app's routes (never cached, with the
 * Content-Security-Policy), and `/assets/*` with a year of immutable caching (their names change with
 * their content), gzipped when the client accepts it. Every other request goes on to the API.
 */
export function webAppMiddleware(dir: string): (req: Request, res: Response, next: NextFunction) => void {
  const root = resolve(dir);
  const assets = new Map<string, { type: string; raw: Buffer; gz: Buffer }>();
  const notBuilt = (res: Response) => {
    res.status(503).json({ detail: `The web app is not built (no ${join(root, 'index.html')}): run npm run build:web` });
  };

  const page = async (res: Response, head: boolean) => {
    const file = join(root, 'index.html');
    if (!existsSync(file)) return notBuilt(res);
    const html = await readFile(file);
    securityHeaders(res);
    res.setHeader('Content-Security-Policy', WEB_CONTENT_SECURITY_POLICY);
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.setHeader('Content-Length', html.length);
    res.status(200).end(head ? undefined : html);
  };

  const asset = async (req: Request, res: Response, name: string, head: boolean) => {
    const file = join(root, 'assets', name);
    const info = ASSET_NAME.test(name) ? await stat(file).catch(() => null) : null;
    if (!info?.isFile()) {
      res.status(404).json({ detail: 'Not Found' });
      return;
    }
    securityHeaders(res);
    res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
    res.setHeader('Content-Type', TYPES[extname(name)] ?? 'application/octet-stream');
    res.setHeader('Vary', 'Accept-Encoding');
    if (info.size > CACHED_ASSET_BYTES) {
      res.setHeader('Content-Length', info.size);
      if (head) return void res.status(200).end();
      createReadStream(file).pipe(res.status(200));
      return;
    }
    let hit = assets.get(name);
    if (!hit) {
      const raw = await readFile(file);
      hit = { type: TYPES[extname(name)] ?? 'application/octet-stream', raw, gz: gzipSync(raw, { level: 9 }) };
      if (assets.size >= CACHED_ASSETS) assets.delete(assets.keys().next().value as string);
      assets.set(name, hit);
    }
    const gzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
    const body = gzip ? hit.gz : hit.raw;
    if (gzip) res.setHeader('Content-Encoding', 'gzip');
    res.setHeader('Content-Length', body.length);
    res.status(200).end(head ? undefined : body);
  };

  return (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    const q = req.url.indexOf('?');
    const path = q < 0 ? req.url : req.url.slice(0, q);
    const kind = isWebAppPath(path);
    if (!kind) return next();
    const head = req.method === 'HEAD';
    let name = '';
    try {
      name = decodeURIComponent(path.slice('/assets/'.length));
    } catch {
      name = ''; // malformed escapes name no asset: a 404 below
    }
    const done = kind === 'page' ? page(res, head) : asset(req, res, name, head);
    done.catch(next);
  };
}
