import type { ValidationErrorItem } from '@th/contracts';

export enum ErrorCode {
  Validation = 'validation',
  BadRequest = 'bad_request',
  Unauthorized = 'unauthorized',
  Forbidden = 'forbidden',
  NotFound = 'not_found',
  Conflict = 'conflict',
  /** The resource existed and is no more (an expired token): asking again will not help. */
  Gone = 'gone',
  PayloadTooLarge = 'payload_too_large',
  UnsupportedMediaType = 'unsupported_media_type',
  RateLimited = 'rate_limited',
  Unavailable = 'unavailable',
  Internal = 'internal',
}

export const HTTP_STATUS: Record<ErrorCode, number> = {
  [ErrorCode.Validation]: 422,
  [ErrorCode.BadRequest]: 400,
  [ErrorCode.Unauthorized]: 401,
  [ErrorCode.Forbidden]: 403,
  [ErrorCode.NotFound]: 404,
  [ErrorCode.Conflict]: 409,
  [ErrorCode.Gone]: 410,
  [ErrorCode.PayloadTooLarge]: 413,
  [ErrorCode.UnsupportedMediaType]: 415,
  [ErrorCode.RateLimited]: 429,
  [ErrorCode.Unavailable]: 503,
  [ErrorCode.Internal]: 500,
};

/** A domain error: carries a code that each transport maps to its own shape. */
export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ValidationErrorItem[],
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export class ValidationFailed extends DomainError {
  constructor(details: ValidationErrorItem[]) {
    super(ErrorCode.Validation, details.map((d) => `${d.loc.join('.')}: ${d.msg}`).join('; '), details);
  }
}

export const notFound = (what: string) => new DomainError(ErrorCode.NotFound, `${what} not found`);
export const conflict = (msg: string) => new DomainError(ErrorCode.Conflict, msg);
export const gone = (msg: string) => new DomainError(ErrorCode.Gone, msg);
export const badRequest = (msg: string) => new DomainError(ErrorCode.BadRequest, msg);
export const unauthorized = (msg = 'Unauthorized') => new DomainError(ErrorCode.Unauthorized, msg);
export const forbidden = (msg = 'Forbidden') => new DomainError(ErrorCode.Forbidden, msg);
