import { Body, Controller, Get, Module, Post, Req, Res } from '@nestjs/common';
import type { INestApplication } from '@nestjs/common';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Express, Request, Response } from 'express';
import { createHttpApp, listen } from './http-app';

@Controller()
class ProbeController {
  /** Where the request and response objects' prototypes point, as Express left them. */
  @Get('prototypes')
  prototypes(@Req() req: Request, @Res() res: Response): void {
    const app = req.app as Express;
    res.json({ request: Object.getPrototypeOf(req) === app.request, response: Object.getPrototypeOf(res) === app.response, ua: req.get('user-agent') });
  }

  @Post('echo')
  echo(@Body() body: unknown): unknown {
    return { body };
  }

  /** An answer large enough to be serialized in slices (a bulk write's). */
  @Get('large')
  large(): unknown {
    return LARGE;
  }
}

const LARGE = { items: Array.from({ length: 5000 }, (_, i) => ({ id: i, text: `é€😀 ${i}\n`, gone: undefined })), when: new Date(0) };

@Module({ controllers: [ProbeController] })
class ProbeModule {}

describe('createHttpApp (real HTTP server on 127.0.0.1)', () => {
  let app: INestApplication;
  let url: string;
  let close: () => Promise<void>;
  /** Per request, as the server made it (before Express saw it): were its prototypes the application's? */
  const made: { request: boolean; response: boolean }[] = [];

  beforeAll(async () => {
    app = await createHttpApp(ProbeModule, { service: 'probe', logLevel: 'error', maxBodyBytes: 1024 });
    const express = app.getHttpAdapter().getInstance() as Express;
    (app.getHttpServer() as Server).prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
      made.push({ request: Object.getPrototypeOf(req) === express.request, response: Object.getPrototypeOf(res) === express.response });
    });
    ({ url, close } = await listen(app, '127.0.0.1', 0));
  });
  afterAll(async () => {
    await close();
  });

  it('makes requests and responses with the Express application’s prototypes from the start', async () => {
    const r = await fetch(`${url}/prototypes`, { headers: { 'user-agent': 'probe/1' } });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ request: true, response: true, ua: 'probe/1' });
    // Express's own Object.setPrototypeOf(req, app.request) then changes nothing
    expect(made.at(-1)).toEqual({ request: true, response: true });
  });

  it('sends a large answer with the bytes and headers of res.json', async () => {
    for (const method of ['GET', 'HEAD']) {
      const r = await fetch(`${url}/large`, { method });
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(r.headers.get('content-length')).toBe(String(Buffer.byteLength(JSON.stringify(LARGE))));
      expect(await r.text()).toBe(method === 'GET' ? JSON.stringify(LARGE) : '');
    }
  });

  it('still reads bodies, answers errors in the house shapes, and keeps connections alive', async () => {
    for (let i = 0; i < 3; i++) {
      const ok = await fetch(`${url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ i }) });
      expect(ok.status).toBe(201);
      expect(await ok.json()).toEqual({ body: { i } });
    }
    const bad = await fetch(`${url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"i":' });
    expect(bad.status).toBe(422);
    const detail = ((await bad.json()) as { detail: { loc: unknown[]; type: string }[] }).detail;
    expect(detail).toHaveLength(1);
    expect(detail[0].type).toBe('json_invalid');
    expect(detail[0].loc[0]).toBe('body');
    const big = await fetch(`${url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ pad: 'x'.repeat(2048) }) });
    expect(big.status).toBe(413);
    const missing = await fetch(`${url}/nowhere`);
    expect(missing.status).toBe(404);
  });
});
