import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Response } from 'express';
import { DomainError, ErrorCode, HTTP_STATUS } from './errors';

/** Maps every error to the spec's shapes: 422 {detail:[{loc,msg,type}]}, other errors {detail: string}. */
@Catch()
export class HttpExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('http');

  catch(exception: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    if (res.headersSent) return;
    if (exception instanceof DomainError) {
      const status = HTTP_STATUS[exception.code];
      if (exception.code === ErrorCode.Validation) {
        res.status(status).json({ detail: exception.details ?? [] });
      } else {
        if (status >= 500) this.logger.error({ msg: exception.message, code: exception.code, cause: String(exception.cause ?? '') });
        res.status(status).json({ detail: exception.message });
      }
      return;
    }
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const body = exception.getResponse();
      const detail =
        typeof body === 'string' ? body : ((body as { message?: unknown }).message ?? exception.message);
      res.status(status).json({ detail: Array.isArray(detail) ? detail.join('; ') : String(detail) });
      return;
    }
    const status = (exception as { status?: number; statusCode?: number }).status ?? 500;
    if (status === 413) {
      res.status(413).json({ detail: 'Request body too large' });
      return;
    }
    this.logger.error(exception instanceof Error ? exception : { msg: String(exception) });
    res.status(500).json({ detail: 'Internal Server Error' });
  }
}
