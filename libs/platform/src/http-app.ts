import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NextFunction, Request, Response } from 'express';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { apiPrefixRewrite, bodyReader } from './body-reader';
import { HttpExceptionFilter } from './http-exception.filter';
import { JsonLogger, type LogLevel } from './logger';

export interface HttpAppOptions {
  service: string;
  logLevel: LogLevel;
  maxBodyBytes: number;
  /** Middleware that must see the raw request stream (the gateway's proxy). */
  beforeBody?: ((req: Request, res: Response, next: NextFunction) => void)[];
}

/** Creates a Nest HTTP app with the house body handling, error shapes and path prefixes. */
export async function createHttpApp(module: Parameters<typeof NestFactory.create>[0], opts: HttpAppOptions): Promise<INestApplication> {
  const app = await NestFactory.create<NestExpressApplication>(module, {
    bodyParser: false,
    logger: new JsonLogger(opts.service, opts.logLevel),
    abortOnError: false,
  });
  app.disable('x-powered-by');
  app.set('etag', false);
  for (const mw of opts.beforeBody ?? []) app.use(mw);
  app.use(apiPrefixRewrite);
  app.use(bodyReader(opts.maxBodyBytes));
  app.useGlobalFilters(new HttpExceptionFilter());
  app.enableShutdownHooks();
  return app;
}

/** Listens on host:port and returns the address and an ordered close (the app, then `also`). */
export async function listen(app: INestApplication, host: string, port: number, also: () => Promise<unknown> = async () => undefined): Promise<{ url: string; close(): Promise<void> }> {
  await app.listen(port, host);
  const { port: bound } = app.getHttpServer().address() as { port: number };
  return {
    url: `http://${host}:${bound}`,
    async close() {
      await app.close();
      await also();
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
