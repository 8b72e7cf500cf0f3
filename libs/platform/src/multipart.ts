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

/** Splits a whole multipart/form-data body into parts; binary-safe, no copies of part data. */
export function parseMultipart(body: Buffer, boundary: string): MultipartPart[] {
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: MultipartPart[] = [];
  let pos = body.indexOf(delimiter);
  if (pos < 0) throw new MultipartError('multipart boundary not found in body');
  for (;;) {
    pos += delimiter.length;
    if (body[pos] === 0x2d && body[pos + 1] === 0x2d) break; // closing delimiter "--"
    if (body[pos] === 0x0d && body[pos + 1] === 0x0a) pos += 2;
    else if (body[pos] === 0x0a) pos += 1;
    else throw new MultipartError('malformed multipart delimiter line');
    let headerEnd = body.indexOf('\r\n\r\n', pos);
    let sepLen = 4;
    const lfEnd = body.indexOf('\n\n', pos);
    if (headerEnd < 0 || (lfEnd >= 0 && lfEnd < headerEnd)) {
      headerEnd = lfEnd;
      sepLen = 2;
    }
    if (headerEnd < 0) throw new MultipartError('multipart part without header terminator');
    const headers = body.subarray(pos, headerEnd).toString('utf8').split(/\r?\n/);
    const next = body.indexOf(delimiter, headerEnd + sepLen);
    if (next < 0) throw new MultipartError('multipart body is truncated (no closing boundary)');
    let dataEnd = next;
    if (body[dataEnd - 1] === 0x0a) dataEnd -= body[dataEnd - 2] === 0x0d ? 2 : 1;
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
    parts.push({ name, filename, contentType, data: body.subarray(headerEnd + sepLen, dataEnd) });
    pos = next;
  }
  return parts;
}
