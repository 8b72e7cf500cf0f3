import { EventLoopPacer } from './pacer';
import { ValidationFailed } from './errors';

export interface MultipartPart {
  name: string;
  filename?: string;
  contentType: string;
  data: Buffer;
}

export class MultipartError extends Error {}

/** The boundary of a multipart/form-data content type, or null. */
export function multipartBoundary(contentType: string | undefined): string | null {
  if (!contentType || !/^multipart\/form-data/i.test(contentType)) return null;
  const m = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType);
  return m ? (m[1] ?? m[2]).trim() : null;
}

/** A part's header block larger than this is refused (the headers of a form part are a few hundred bytes). */
export const MULTIPART_MAX_HEADER_BYTES = 16 * 1024;

/**
 * The header block that starts at `pos`: where its last header line's text ends and where the part's data
 * starts (after the blank line). Reads line by line, so the work is the header block's size, never the body's.
 */
function headerBlock(body: Buffer, pos: number): { headersEnd: number; dataStart: number } {
  let line = pos;
  let headersEnd = pos;
  for (;;) {
    if (body[line] === 0x0a) return { headersEnd, dataStart: line + 1 };
    if (body[line] === 0x0d && body[line + 1] === 0x0a) return { headersEnd, dataStart: line + 2 };
    const nl = body.indexOf(0x0a, line);
    if (nl < 0) throw new MultipartError('multipart part without header terminator');
    if (nl - pos > MULTIPART_MAX_HEADER_BYTES) throw new MultipartError(`multipart part headers exceed ${MULTIPART_MAX_HEADER_BYTES} bytes`);
    headersEnd = body[nl - 1] === 0x0d ? nl - 1 : nl;
    line = nl + 1;
  }
}

/**
 * The parts of a whole multipart/form-data body, one at a time; binary-safe, no copies of part data. Linear in
 * the body: every search starts where the previous one ended and nothing already read is read again.
 */
export function* multipartParts(body: Buffer, boundary: string): Generator<MultipartPart> {
  const delimiter = Buffer.from(`--${boundary}`);
  let pos = body.indexOf(delimiter);
  if (pos < 0) throw new MultipartError('multipart boundary not found in body');
  for (;;) {
    pos += delimiter.length;
    if (body[pos] === 0x2d && body[pos + 1] === 0x2d) return; // closing delimiter "--"
    if (body[pos] === 0x0d && body[pos + 1] === 0x0a) pos += 2;
    else if (body[pos] === 0x0a) pos += 1;
    else throw new MultipartError('malformed multipart delimiter line');
    const { headersEnd, dataStart } = headerBlock(body, pos);
    const headers = headersEnd > pos ? body.toString('utf8', pos, headersEnd).split(/\r?\n/) : [];
    const next = body.indexOf(delimiter, dataStart);
    if (next < 0) throw new MultipartError('multipart body is truncated (no closing boundary)');
    let dataEnd = next;
    if (body[dataEnd - 1] === 0x0a) dataEnd -= body[dataEnd - 2] === 0x0d ? 2 : 1;
    if (dataEnd < dataStart) dataEnd = dataStart;
    let name: string | undefined;
    let filename: string | undefined;
    let contentType = 'text/plain';
    for (const h of headers) {
      const idx = h.indexOf(':');
      if (idx < 0) continue;
      const key = h.slice(0, idx).trim().toLowerCase();
      const value = h.slice(idx + 1).trim();
      if (key === 'content-disposition') {
        name = /\bname="((?:[^"\\]|\\.)*)"/i.exec(value)?.[1] ?? /\bname=([^;]+)/i.exec(value)?.[1]?.trim();
        filename = /\bfilename="((?:[^"\\]|\\.)*)"/i.exec(value)?.[1];
      } else if (key === 'content-type') {
        contentType = value;
      }
    }
    if (!name) throw new MultipartError('multipart part without a name');
    yield { name, filename, contentType, data: body.subarray(dataStart, dataEnd) };
    pos = next;
  }
}

/** Every part of a multipart/form-data body (see multipartParts). */
export function parseMultipart(body: Buffer, boundary: string): MultipartPart[] {
  return [...multipartParts(body, boundary)];
}

/** Every part, giving the event loop way between slices of work (a 25 MB body of small parts takes longer than one slice). */
export async function parseMultipartPaced(body: Buffer, boundary: string, pacer = new EventLoopPacer()): Promise<MultipartPart[]> {
  const parts: MultipartPart[] = [];
  for (const part of multipartParts(body, boundary)) {
    parts.push(part);
    if (pacer.due()) await pacer.yield();
  }
  return parts;
}

/** The parts of a multipart body, paced; a malformed body is a 422 on `body` (ValidationFailed). */
export async function parseMultipartOr422(body: Buffer, boundary: string, pacer?: EventLoopPacer): Promise<MultipartPart[]> {
  try {
    return await parseMultipartPaced(body, boundary, pacer);
  } catch (err) {
    if (err instanceof MultipartError) throw new ValidationFailed([{ loc: ['body'], msg: err.message, type: 'value_error' }]);
    throw err;
  }
}
