import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Controller, Get, Module, Post } from '@nestjs/common';
import type { INestApplication } from '@nestjs/common';
import { createHttpApp, listen } from './http-app';
import { WEB_CONTENT_SECURITY_POLICY, isWebAppPath } from './web-app';

@Controller()
class ApiController {
  @Get('info')
  info(): unknown {
    return { api: true };
  }

  @Post()
  root(): unknown {
    return { posted: true };
  }
}

@Module({ controllers: [ApiController] })
class ApiModule {}

async function serve(webDir: string): Promise<{ app: INestApplication; url: string; close(): Promise<void> }> {
  const app = await createHttpApp(ApiModule, { service: 'web-probe', logLevel: 'error', maxBodyBytes: 1024, webDir });
  const { url, close } = await listen(app, '127.0.0.1', 0);
  return { app, url, close };
}

describe('the web app middleware (real HTTP server on 127.0.0.1)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'th-web-'));
  const script = `console.log(${JSON.stringify('x'.repeat(4096))});\n`;
  let url: string;
  let close: () => Promise<void>;
  beforeAll(async () => {
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'index.html'), '<!doctype html><script type="module" src="/assets/index-abc123.js"></script>');
    writeFileSync(join(dir, 'assets', 'index-abc123.js'), script);
    writeFileSync(join(dir, 'secret.txt'), 'not an asset');
    ({ url, close } = await serve(dir));
  });
  afterAll(async () => {
    await close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('knows its routes from a fixed list, so API paths are never shadowed', () => {
    for (const p of ['/', '/login', '/o/ws/projects', '/o/ws/projects/p/x/r/y']) expect(isWebAppPath(p)).toBe('page');
    expect(isWebAppPath('/assets/index-abc.js')).toBe('asset');
    for (const p of ['/info', '/ok', '/runs', '/sessions', '/api/v1/sessions', '/openapi.json', '/otel/v1/traces', '/organizations', '/login/x']) expect(isWebAppPath(p)).toBeNull();
  });

  it('answers app routes with the page, never cached, with the CSP and framing refused', async () => {
    for (const p of ['/', '/login', '/o/ws/projects/p/x/r/y?poll=true']) {
      const res = await fetch(`${url}${p}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expect(res.headers.get('content-security-policy')).toBe(WEB_CONTENT_SECURITY_POLICY);
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(await res.text()).toContain('/assets/index-abc123.js');
    }
    const head = await fetch(`${url}/login`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
  });

  it('serves hashed assets for a year, immutable, gzipped when accepted', async () => {
    const gz = await fetch(`${url}/assets/index-abc123.js`, { headers: { 'accept-encoding': 'gzip' }, decompress: false } as RequestInit);
    expect(gz.status).toBe(200);
    expect(gz.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(gz.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(gz.headers.get('vary')).toBe('Accept-Encoding');
    expect(gz.headers.get('content-encoding')).toBe('gzip');
    const body = Buffer.from(await gz.arrayBuffer());
    // fetch may already have decoded it; either way the script is what the client gets.
    expect(body[0] === 0x1f ? gunzipSync(body).toString() : body.toString()).toBe(script);
    expect(Number(gz.headers.get('content-length'))).toBeLessThan(script.length);
  });

  it('refuses names outside assets/ and unknown assets with a 404, and hands other methods and paths to the API', async () => {
    for (const p of ['/assets/missing.js', '/assets/..%2Fsecret.txt', '/assets/%2E%2E%2Fsecret.txt', '/assets/.hidden', '/assets/', '/assets/%ZZ']) {
      const res = await fetch(`${url}${p}`);
      expect(res.status).toBe(404);
      expect(await res.text()).not.toContain('not an asset');
    }
    expect(await (await fetch(`${url}/info`)).json()).toEqual({ api: true });
    expect(await (await fetch(`${url}/`, { method: 'POST' })).json()).toEqual({ posted: true });
  });

  it('says how to build the app when it is not built', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'th-web-empty-'));
    const other = await serve(empty);
    try {
      const res = await fetch(`${other.url}/o/ws/projects`);
      expect(res.status).toBe(503);
      expect(((await res.json()) as { detail: string }).detail).toContain('npm run build:web');
      expect((await fetch(`${other.url}/info`)).status).toBe(200);
    } finally {
      await other.close();
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
