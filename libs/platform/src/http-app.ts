import { rmSync } from 'node:fs';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { StreamableFile, type INestApplication, type NestApplicationOptions } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Express, NextFunction, Request, Response } from 'express';
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express';
import { apiPrefixRewrite, bodyReader } from './body-reader';
import { HttpExceptionFilter } from './http-exception.filter';
import { JsonBodyPool } from './json-body-pool';
import { isLargeJson, jsonBytes } from './json-text';
import { JsonLogger, type LogLevel } from './logger';
import { enableProcessMetrics, httpMetricsMiddleware, metricsEndpoint, startMetricsServer } from './metrics';
import { requestIdResponseHeader, shutdownSelfTracing, startSelfTracing, traceHttpServer, type SelfTracingSettings } from './self-tracing';
import { webAppMiddleware } from './web-app';

export interface HttpAppOptions {
  service: string;
  logLevel: LogLevel;
  maxBodyBytes: number;
  /** Middleware that must see the raw request stream (the gateway's proxy). */
  beforeBody?: ((req: Request, res: Response, next: NextFunction) => void)[];
  /** Serve the built web app from this directory (WEB_DIR) at its routes; unset or empty: not served. */
  webDir?: string;
  /**
   * Where /metrics is served: on a port of its own (METRICS_PORT, unauthenticated, on HOST), else on the public
   * port, behind the METRICS_TOKEN bearer token when one is set.
   */
  metrics?: { METRICS_PORT?: number; METRICS_TOKEN?: string; HOST?: string };
  /**
   * The OTEL_* settings: with an endpoint, the process traces itself (docs/self-tracing.md); its requests are
   * traced once `listen` (or `traceHttpServer`, for an app that listens by itself) wraps the server.
   */
  tracing?: SelfTracingSettings;
}

/**
 * A constructor node:http calls for each request (or response) that makes an object of `proto` and
 * runs `base` on it: the server's `IncomingMessage` / `ServerResponse` option.
 */
function constructorWithPrototype<A extends unknown[]>(base: (this: object, ...args: A) => void, proto: object): new (...args: A) => never {
  function Constructed(this: object, ...args: A): void {
    base.apply(this, args);
  }
  Constructed.prototype = proto;
  return Constructed as unknown as new (...args: A) => never;
}

/**
 * Express gives every request and response its application's prototypes (`Object.setPrototypeOf(req,
 * app.request)`). Changing an object's prototype after it was made keeps it, and what it references
 * (the request body, the parsed runs, the response), alive through young-generation collections until
 * the next full one: under load every scavenge kept and promoted 13-40 MB that was already garbage
 * (measured with `--trace-gc-nvp`; a bare node:http server that sets a prototype per request does the
 * same, one that does not keeps nothing). Here the server makes requests and responses with those
 * prototypes from the start, so Express's call changes nothing. HTTPS and Nest's connection tracking
 * keep Nest's own server.
 */
class ExpressAdapterWithAppPrototypes extends ExpressAdapter {
  override initHttpServer(options: NestApplicationOptions): void {
    if (options?.httpsOptions || options?.forceCloseConnections) return super.initHttpServer(options);
    const app = this.getInstance<Express>();
    this.httpServer = createServer(
      {
        IncomingMessage: constructorWithPrototype(IncomingMessage as unknown as (this: object, socket: Socket) => void, app.request) as unknown as typeof IncomingMessage,
        ServerResponse: constructorWithPrototype(ServerResponse as unknown as (this: object, req: IncomingMessage) => void, app.response) as unknown as typeof ServerResponse,
      },
      app,
    );
  }

  /**
   * A large JSON answer (a bulk write returns what it stored) is serialized in slices: Express's res.json, one
   * JSON.stringify and one UTF-8 encoding, held the event loop for hundreds of milliseconds at 25 MB.
   * The bytes and headers are the ones res.json sends.
   */
  override reply(response: Response, body: unknown, statusCode?: number): unknown {
    if (body instanceof StreamableFile || body instanceof Error || !isLargeJson(body)) return super.reply(response, body, statusCode);
    if (statusCode) response.status(statusCode);
    return jsonBytes(body).then((bytes) => {
      const type = response.get('Content-Type') ?? 'application/json';
      response.set('Content-Type', `${type.replace(/;\s*charset=[^;]*/i, '')}; charset=utf-8`);
      response.send(bytes);
    });
  }
}

/** Creates a Nest HTTP app with the house body handling, error shapes and path prefixes. */
export async function createHttpApp(module: Parameters<typeof NestFactory.create>[0], opts: HttpAppOptions): Promise<INestApplication> {
  const tracing = opts.tracing ? startSelfTracing(opts.tracing, opts.service) : null;
  const app = await NestFactory.create<NestExpressApplication>(module, new ExpressAdapterWithAppPrototypes(), {
    bodyParser: false,
    logger: new JsonLogger(opts.service, opts.logLevel),
    abortOnError: false,
  });
  app.disable('x-powered-by');
  app.set('etag', false);
  enableProcessMetrics();
  app.use(httpMetricsMiddleware);
  if (tracing) app.use(requestIdResponseHeader);
  if (opts.metrics?.METRICS_PORT) {
    const server = await startMetricsServer(opts.metrics.HOST ?? '127.0.0.1', opts.metrics.METRICS_PORT);
    app.getHttpServer().once('close', () => server.close());
  } else {
    app.use(metricsEndpoint({ token: opts.metrics?.METRICS_TOKEN }));
  }
  // Ahead of the rate limiter: the app's page and files are static, and loading them spends no API quota.
  if (opts.webDir) app.use(webAppMiddleware(opts.webDir));
  for (const mw of opts.beforeBody ?? []) app.use(mw);
  app.use(apiPrefixRewrite);
  // Large JSON bodies are parsed off the event loop (workers start on first use, stop with the server).
  const jsonPool = new JsonBodyPool();
  app.getHttpServer().once('close', () => void jsonPool.close());
  app.use(bodyReader(opts.maxBodyBytes, jsonPool));
  app.useGlobalFilters(new HttpExceptionFilter());
  app.enableShutdownHooks();
  return app;
}

/** Listens on host:port and returns the address and an ordered close (the app, then `also`). */
export async function listen(app: INestApplication, host: string, port: number, also: () => Promise<unknown> = async () => undefined): Promise<{ url: string; close(): Promise<void> }> {
  // Last of the request listeners' wrappers (the gateway's proxied routes included), so every request is traced.
  traceHttpServer(app.getHttpServer());
  await app.listen(port, host);
  const { port: bound } = app.getHttpServer().address() as { port: number };
  return {
    url: `http://${host}:${bound}`,
    async close() {
      await app.close();
      await also();
      await shutdownSelfTracing();
    },
  };
}

/**
 * Listens on a unix socket instead: a path (a stale socket file there is replaced), or `fd:N`, a listening socket
 * inherited from the parent (how a sandboxed agent server gets the socket its control plane made).
 */
export async function listenSocket(app: INestApplication, socket: string, also: () => Promise<unknown> = async () => undefined): Promise<{ url: string; close(): Promise<void> }> {
  const fd = /^fd:(\d+)$/.exec(socket);
  if (!fd) rmSync(socket, { force: true });
  traceHttpServer(app.getHttpServer());
  await app.listen((fd ? { fd: Number(fd[1]) } : socket) as unknown as string);
  return {
    url: fd ? `unix:fd ${fd[1]}` : `unix:${socket}`,
    async close() {
      await app.close();
      await also();
      await shutdownSelfTracing();
    },
  };
}

/** Runs a service until SIGINT/SIGTERM, then closes it in order (intake, consumers, writers, clients). */
export function runUntilSignal(name: string, start: () => Promise<{ close(): Promise<void>; url: string }>): void {
  start()
    .then((running) => {
      process.stdout.write(JSON.stringify({ time: new Date().toISOString(), level: 'info', service: name, msg: `listening on ${running.url}` }) + '\n');
      const stop = (signal: string) => {
        process.stdout.write(JSON.stringify({ time: new Date().toISOString(), level: 'info', service: name, msg: `${signal}: shutting down` }) + '\n');
        running.close().then(
          () => process.exit(0),
          (err: unknown) => {
            process.stderr.write(`${String(err)}\n`);
            process.exit(1);
          },
        );
      };
      process.once('SIGINT', () => stop('SIGINT'));
      process.once('SIGTERM', () => stop('SIGTERM'));
    })
    .catch((err: unknown) => {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    });
}
