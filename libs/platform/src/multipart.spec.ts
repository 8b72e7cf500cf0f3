import { multipartBoundary, parseMultipart, MultipartError, MULTIPART_MAX_HEADER_BYTES } from './multipart';

describe('multipart parser', () => {
  const boundary = '----LangSmithFormBoundaryabc';
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="post.1"\r\nContent-Type: application/json; length=7\r\n\r\n{"a":1}\r\n`),
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="attachment.1.img"; filename="x.png"\r\nContent-Type: image/png\r\n\r\n`),
    Buffer.from([0x00, 0x0d, 0x0a, 0xff, 0x2d, 0x2d]),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);

  it('splits parts binary-safely with their headers', () => {
    expect(multipartBoundary(`multipart/form-data; boundary=${boundary}`)).toBe(boundary);
    expect(multipartBoundary('multipart/form-data; boundary="q w"')).toBe('q w');
    expect(multipartBoundary('application/json')).toBeNull();
    const parts = parseMultipart(body, boundary);
    expect(parts.map((p) => [p.name, p.contentType, p.filename])).toEqual([
      ['post.1', 'application/json; length=7', undefined],
      ['attachment.1.img', 'image/png', 'x.png'],
    ]);
    expect(parts[0].data.toString()).toBe('{"a":1}');
    expect([...parts[1].data]).toEqual([0x00, 0x0d, 0x0a, 0xff, 0x2d, 0x2d]);
  });

  it('rejects truncated and malformed bodies', () => {
    expect(() => parseMultipart(body.subarray(0, body.length - 20), boundary)).toThrow(MultipartError);
    expect(() => parseMultipart(Buffer.from('nothing here'), boundary)).toThrow(/boundary not found/);
    expect(() => parseMultipart(Buffer.from(`--${boundary}\r\nContent-Type: x\r\n\r\ndata\r\n--${boundary}--`), boundary)).toThrow(/without a name/);
  });

  it('reads LF-only bodies and parts with empty data', () => {
    const lf = Buffer.from(`--${boundary}\nContent-Disposition: form-data; name="a"\n\n\n--${boundary}\nContent-Disposition: form-data; name="b"\n\nxy\n--${boundary}--\n`);
    expect(parseMultipart(lf, boundary).map((p) => [p.name, p.data.toString()])).toEqual([
      ['a', ''],
      ['b', 'xy'],
    ]);
  });

  it('refuses a header block over the limit without reading the rest of the body', () => {
    const big = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="a"\r\nX: ${'y'.repeat(MULTIPART_MAX_HEADER_BYTES)}\r\n\r\nd\r\n--${boundary}--`);
    expect(() => parseMultipart(big, boundary)).toThrow(/headers exceed/);
  });

  // Before: every part searched the rest of the body for "\n\n", which CRLF bodies never contain (20,000 parts: 7 s).
  it('is linear in the number of CRLF parts', () => {
    const body = (n: number) =>
      Buffer.from(`${Array.from({ length: n }, (_, i) => `--${boundary}\r\nContent-Disposition: form-data; name="p.${i}"\r\n\r\n\r\n`).join('')}--${boundary}--\r\n`);
    const small = body(10_000);
    const large = body(100_000);
    parseMultipart(small, boundary); // warm-up
    const t0 = performance.now();
    expect(parseMultipart(small, boundary)).toHaveLength(10_000);
    const t1 = performance.now();
    expect(parseMultipart(large, boundary)).toHaveLength(100_000);
    const t2 = performance.now();
    // Ten times the parts: quadratic would be a hundred times the time; a generous bound for a busy machine.
    expect(t2 - t1).toBeLessThan(Math.max(30 * (t1 - t0), 1000));
  });
});
