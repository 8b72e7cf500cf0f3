import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Response } from 'express';
import { DomainError, ErrorCode, HTTP_STATUS } from './errors';

/**
 * The spec's shapes for any error: 422 {detail:[{loc,msg,type}]}, other errors {detail: string}. Server
 * errors are logged. Used by the exception filter and by handlers that answer ahead of Nest.
 */
export function errorResponse(exception: unknown, logger: Logger): { status: number; body: { detail: unknown } } {
  if (exception instanceof DomainError) {
    const status = HTTP_STATUS[exception.code];
    if (exception.code === ErrorCode.Validation) return { status, body: { detail: exception.details ?? [] } };
    if (status >= 500) logger.error({ msg: exception.message, code: exception.code, cause: String(exception.cause ?? '') });
    return { status, body: { detail: exception.message } };
  }
  if (exception instanceof HttpException) {
    const body = exception.getResponse();
    const detail = typeof body === 'string' ? body : ((body as { message?: unknown }).message ?? exception.message);
    return { status: exception.getStatus(), body: { detail: Array.isArray(detail) ? detail.join('; ') : String(detail) } };
  }
  const status = (exception as { status?: number; statusCode?: number } | null)?.status ?? 500;
  if (status === 413) return { status: 413, body: { detail: 'Request body too large' } };
  logger.error(exception instanceof Error ? exception : { msg: String(exception) });
  return { status: 500, body: { detail: 'Internal Server Error' } };
}

/** Maps every error to the spec's shapes (see errorResponse). */
@Catch()
export class HttpExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('http');

  catch(exception: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    if (res.headersSent) return;
    const { status, body } = errorResponse(exception, this.logger);
    res.status(status).json(body);
  }
}
