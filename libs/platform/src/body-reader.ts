import * as zlib from 'node:zlib';
import type { NextFunction, Request, Response } from 'express';
import { decompress as zstdDecompress } from 'fzstd';

export interface RawBodyRequest extends Request {
  rawBody?: Buffer;
}

function sendError(res: Response, status: number, body: unknown): void {
  if (res.headersSent) return;
  res.status(status).json(body);
}

function inflate(encoding: string, data: Buffer, limit: number): Buffer {
  switch (encoding) {
    case 'identity':
    case '':
      return data;
    case 'gzip':
    case 'x-gzip':
      return zlib.gunzipSync(data, { maxOutputLength: limit });
    case 'deflate':
      return zlib.inflateSync(data, { maxOutputLength: limit });
    case 'br':
      return zlib.brotliDecompressSync(data, { maxOutputLength: limit });
    case 'zstd': {
      const out = zstdDecompress(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
      if (out.byteLength > limit) throw new RangeError('Cannot create a Buffer larger than the limit');
      return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
    }
    default:
      throw new TypeError(`unsupported content encoding "${encoding}"`);
  }
}

/** The 422 body for a request body that is not valid JSON (the byte position as the loc, as FastAPI does). */
export function jsonDecodeError(err: unknown): { detail: { loc: (string | number)[]; msg: string; type: string }[] } {
  const match = /position (\d+)/.exec((err as Error).message);
  return { detail: [{ loc: ['body', match ? Number(match[1]) : 0], msg: `JSON decode error: ${(err as Error).message}`, type: 'json_invalid' }] };
}

/**
 * Reads the whole request body (chunked or not) within a byte limit, undoes gzip/deflate/br/zstd,
 * and parses JSON bodies. Multipart bodies stay raw in `req.rawBody` for the route to parse.
 */
export function bodyReader(limitBytes: number) {
  return (req: RawBodyRequest, res: Response, next: NextFunction): void => {
    const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
    if (!hasBody) {
      req.body = undefined;
      return next();
    }
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > limitBytes) {
      sendError(res, 413, { detail: `Request body exceeds the limit of ${limitBytes} bytes` });
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let aborted = false;
    req.on('data', (chunk: Buffer) => {
      if (aborted) return;
      size += chunk.length;
      if (size > limitBytes) {
        aborted = true;
        chunks.length = 0;
        sendError(res, 413, { detail: `Request body exceeds the limit of ${limitBytes} bytes` });
        return;
      }
      chunks.push(chunk);
    });
    req.on('error', (err) => {
      if (!aborted) next(err);
      aborted = true;
    });
    req.on('end', () => {
      if (aborted) return;
      const encoding = String(req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
      let raw: Buffer;
      try {
        raw = inflate(encoding, Buffer.concat(chunks, size), limitBytes);
      } catch (err) {
        if (err instanceof TypeError) return sendError(res, 415, { detail: (err as Error).message });
        if (err instanceof RangeError || (err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE')
          return sendError(res, 413, { detail: `Decompressed body exceeds the limit of ${limitBytes} bytes` });
        return sendError(res, 422, {
          detail: [{ loc: ['body'], msg: `Could not decode ${encoding} body: ${(err as Error).message}`, type: 'value_error' }],
        });
      }
      req.rawBody = raw;
      const type = String(req.headers['content-type'] ?? '').toLowerCase();
      if (type === '' || type.includes('json')) {
        if (raw.length === 0) {
          req.body = undefined;
          return next();
        }
        try {
          req.body = JSON.parse(raw.toString('utf8'));
        } catch (err) {
          return sendError(res, 422, jsonDecodeError(err));
        }
      }
      next();
    });
  };
}

/** The published SDK appends paths to whatever base the user set: serve /, /api and /api/v1 alike. */
export function apiPrefixRewrite(req: Request, _res: Response, next: NextFunction): void {
  const m = /^\/api(?:\/v1)?(?=\/|$)/.exec(req.url);
  if (m && !req.url.startsWith('/api/v1/platform') && !req.url.startsWith('/api/v2')) {
    req.url = req.url.slice(m[0].length) || '/';
  } else if (req.url.startsWith('/api/v1/platform')) {
    req.url = req.url.slice('/api'.length);
  }
  next();
}
