import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { apiPrefixRewrite, bodyReader } from './body-reader';
import { HttpExceptionFilter } from './http-exception.filter';
import { JsonLogger, type LogLevel } from './logger';

export interface HttpAppOptions {
  service: string;
  logLevel: LogLevel;
  maxBodyBytes: number;
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
  app.use(apiPrefixRewrite);
  app.use(bodyReader(opts.maxBodyBytes));
  app.useGlobalFilters(new HttpExceptionFilter());
  app.enableShutdownHooks();
  return app;
}
