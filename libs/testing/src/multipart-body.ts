import { randomBytes } from 'node:crypto';

export interface PartSpec {
  name: string;
  contentType?: string;
  data: Buffer | string | unknown;
  filename?: string;
}

/** Builds a multipart/form-data body the way the published tracing SDK writes it. */
export function multipartBody(parts: PartSpec[]): { body: Buffer; contentType: string } {
  const boundary = `----LangSmithFormBoundary${randomBytes(8).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const data = Buffer.isBuffer(p.data) ? p.data : Buffer.from(typeof p.data === 'string' ? p.data : JSON.stringify(p.data));
    const type = p.contentType ?? `application/json; length=${data.length}`;
    const filename = p.filename ? `; filename="${p.filename}"` : '';
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"${filename}\r\nContent-Type: ${type}\r\n\r\n`));
    chunks.push(data, Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}
