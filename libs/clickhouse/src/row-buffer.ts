/**
 * An insert body built line by line straight into bytes. Joining a batch's row strings and encoding
 * the result made a second copy of every row on the JS heap (a megabyte-sized string per batch) and
 * kept the row strings alive until the insert finished; here each line is encoded as it comes and its
 * string can be collected at once.
 */
export class RowBuffer {
  private buf: Buffer;
  private used = 0;
  private lines = 0;

  constructor(initialBytes = 64 * 1024) {
    this.buf = Buffer.allocUnsafe(initialBytes);
  }

  /** Appends one line (a newline goes before every line but the first). */
  push(line: string): void {
    // At most 3 bytes per UTF-16 unit: only a line that might not fit is measured, and the buffer
    // grows only if it really does not (reserving 3 bytes per unit grew it for mostly ASCII rows
    // that fit, a copy each time).
    if (this.used + 1 + 3 * line.length > this.buf.length) {
      const need = this.used + 1 + Buffer.byteLength(line, 'utf8');
      if (need > this.buf.length) {
        const grown = Buffer.allocUnsafe(Math.max(need, this.buf.length * 2));
        this.buf.copy(grown, 0, 0, this.used);
        this.buf = grown;
      }
    }
    if (this.lines > 0) this.buf[this.used++] = 0x0a;
    this.used += this.buf.write(line, this.used, 'utf8');
    this.lines++;
  }

  /** Empties the buffer and keeps its memory for the next lines (views taken before are invalid). */
  clear(): void {
    this.used = 0;
    this.lines = 0;
  }

  /** Bytes the buffer holds before it has to grow. */
  get capacity(): number {
    return this.buf.length;
  }

  get count(): number {
    return this.lines;
  }

  /** The bytes so far (a view: valid until the next push). */
  body(): Buffer {
    return this.buf.subarray(0, this.used);
  }
}
