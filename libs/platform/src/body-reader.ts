import { StringDecoder } from 'node:string_decoder';
import * as zlib from 'node:zlib';
import type { NextFunction, Request, Response } from 'express';
import { decompress as zstdDecompress } from 'fzstd';
import { UPLOADS_PATH } from '@th/contracts';
import { promisify } from 'node:util';
import { JsonWorkerLostError, type JsonBodyPool } from './json-body-pool';
import { jsonDepthExceeded, JsonTooDeepError, jsonTooDeepItem, MAX_JSON_DEPTH } from './json-depth';
import { parseByPlan } from './json-plan';

/**
 * Bodies larger than this are read into one buffer as they arrive, and (JSON) checked and cut by the worker
 * pool, then parsed in slices; smaller ones are parsed at once (1 MB of JSON takes a few milliseconds).
 */
export const LARGE_BODY_BYTES = 1024 * 1024;

export interface RawBodyRequest extends Request {
  rawBody?: Buffer;
}

function sendError(res: Response, status: number, body: unknown): void {
  if (res.headersSent) return;
  res.status(status).json(body);
}

const gunzip = promisify(zlib.gunzip);
const inflateDeflate = promisify(zlib.inflate);
const brotliDecompress = promisify(zlib.brotliDecompress);

/** The decoded body; zlib's codecs run on libuv's thread pool, off the event loop. */
async function inflate(encoding: string, data: Buffer, limit: number): Promise<Buffer> {
  switch (encoding) {
    case 'identity':
    case '':
      return data;
    case 'gzip':
    case 'x-gzip':
      return gunzip(data, { maxOutputLength: limit });
    case 'deflate':
      return inflateDeflate(data, { maxOutputLength: limit });
    case 'br':
      return brotliDecompress(data, { maxOutputLength: limit });
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

/** The UTF-8 text of a body read in chunks (a character split between two chunks decoded whole). */
export function utf8Text(chunks: readonly Buffer[]): string {
  if (chunks.length === 1) return chunks[0].toString('utf8');
  const decoder = new StringDecoder('utf8');
  let text = '';
  for (const c of chunks) text += decoder.write(c);
  return text + decoder.end();
}

/** req.rawBody, joined from the chunks on first use. */
function setLazyRawBody(req: RawBodyRequest, chunks: Buffer[], size: number): void {
  let raw: Buffer | undefined;
  Object.defineProperty(req, 'rawBody', {
    configurable: true,
    enumerable: true,
    get: () => (raw ??= chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)),
    set: (v: Buffer | undefined) => {
      raw = v;
    },
  });
}

/** Upload bodies are files: raw whatever their Content-Type, or without one (`curl -T`, fetch with a Buffer). */
const isUpload = (url: string) => url.startsWith(`${UPLOADS_PATH}/`);

/** The 503 for a large body whose worker stopped: nothing was done with the request, the client may send it again. */
function parserLost(res: Response): void {
  if (res.headersSent) return;
  res.setHeader('Retry-After', '1');
  sendError(res, 503, { detail: 'The request body could not be parsed (its parser thread stopped); nothing was stored, retry the request' });
}

/**
 * Reads the whole request body (chunked or not) within a byte limit, undoes gzip/deflate/br/zstd,
 * and parses JSON bodies. Multipart bodies and uploads stay raw in `req.rawBody` for the route.
 * With a pool, JSON bodies over LARGE_BODY_BYTES are checked and cut off the event loop and built in slices
 * (json-plan.ts), with the same answers as the small-body path.
 */
export function bodyReader(limitBytes: number, pool?: JsonBodyPool) {
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
    // A large body of known length is copied into one buffer as it arrives: joining 25 MB at the end (and
    // touching that much fresh memory) held the event loop for tens of milliseconds.
    const whole = declared > LARGE_BODY_BYTES && req.headers['transfer-encoding'] === undefined ? Buffer.allocUnsafeSlow(declared) : null;
    let size = 0;
    let aborted = false;
    req.on('data', (chunk: Buffer) => {
      if (aborted) return;
      if (size + chunk.length > limitBytes) {
        aborted = true;
        chunks.length = 0;
        sendError(res, 413, { detail: `Request body exceeds the limit of ${limitBytes} bytes` });
        return;
      }
      if (whole && size + chunk.length <= whole.length) chunk.copy(whole, size);
      else chunks.push(chunk);
      size += chunk.length;
    });
    req.on('error', (err) => {
      if (!aborted) next(err);
      aborted = true;
    });
    req.on('end', () => {
      if (aborted) return;
      if (whole) chunks.unshift(whole.subarray(0, Math.min(size, whole.length)));
      void finish(req, res, next, chunks, size).catch((err: unknown) => next(err));
    });
  };

  async function finish(req: RawBodyRequest, res: Response, next: NextFunction, chunks: Buffer[], size: number): Promise<void> {
    const encoding = String(req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
    const type = String(req.headers['content-type'] ?? '').toLowerCase();
    const json = !isUpload(req.url) && (type === '' || type.includes('json'));
    // The JSON text to parse, or the bytes for the pool (both null: an empty body).
    let text: string | null = null;
    let bytes: Buffer | null = null;
    if (json && (encoding === 'identity' || encoding === '')) {
      // The common case (every SDK batch): the text comes straight from the chunks read, and the
      // whole body as one Buffer is made only for a route that asks for req.rawBody (a webhook's
      // signature, say). A copy of every body counted towards V8's external memory, and each 64 MB
      // of that forced a garbage collection of the JS heap.
      if (pool && size > LARGE_BODY_BYTES) bytes = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size);
      else {
        setLazyRawBody(req, chunks, size);
        if (size > 0) text = utf8Text(chunks);
      }
    } else {
      let raw: Buffer;
      try {
        raw = await inflate(encoding, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size), limitBytes);
      } catch (err) {
        if (err instanceof TypeError) return sendError(res, 415, { detail: (err as Error).message });
        if (err instanceof RangeError || (err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE')
          return sendError(res, 413, { detail: `Decompressed body exceeds the limit of ${limitBytes} bytes` });
        return sendError(res, 422, {
          detail: [{ loc: ['body'], msg: `Could not decode ${encoding} body: ${(err as Error).message}`, type: 'value_error' }],
        });
      }
      req.rawBody = raw;
      if (json && pool && raw.length > LARGE_BODY_BYTES) bytes = raw;
      else if (json && raw.length > 0) text = raw.toString('utf8');
    }
    if (bytes) return parseInPool(req, res, next, bytes, pool!);
    // A large body's depth check, its parse and the route each get a turn of the event loop of their own
    // (each takes tens of milliseconds per 10 MB).
    const step = size > LARGE_BODY_BYTES ? (fn: () => void) => setImmediate(fn) : (fn: () => void) => fn();
    if (!json || text === null) {
      if (json) req.body = undefined;
      return step(next);
    }
    const body = text;
    const deepAt = jsonDepthExceeded(body);
    if (deepAt >= 0) return sendError(res, 422, { detail: [jsonTooDeepItem(new JsonTooDeepError(deepAt), ['body', deepAt])] });
    step(() => {
      try {
        req.body = JSON.parse(body);
      } catch (err) {
        return sendError(res, 422, jsonDecodeError(err));
      }
      step(next);
    });
  }
}

/** A large JSON body: checked and cut by the pool, then built here in slices; the same answers as above. */
async function parseInPool(req: RawBodyRequest, res: Response, next: NextFunction, bytes: Buffer, pool: JsonBodyPool): Promise<void> {
  let result;
  try {
    result = await pool.run(bytes, MAX_JSON_DEPTH);
  } catch (err) {
    if (err instanceof JsonWorkerLostError) return parserLost(res);
    throw err;
  }
  if (result.kind === 'too_deep') return sendError(res, 422, { detail: [jsonTooDeepItem(new JsonTooDeepError(result.position), ['body', result.position])] });
  if (result.kind === 'invalid') return sendError(res, 422, jsonDecodeError(new SyntaxError(result.message)));
  req.rawBody = result.body;
  req.body = await parseByPlan(result.body, result.plan, undefined, result.storable);
  next();
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
