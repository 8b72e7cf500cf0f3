import { multipartBoundary, parseMultipart, MultipartError } from './multipart';

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
});
