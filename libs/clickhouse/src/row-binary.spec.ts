import { RowBinaryBuffer } from './row-binary';

/** Reads back what RowBinaryBuffer wrote (the layout ClickHouse documents for RowBinary). */
function reader(b: Buffer) {
  let p = 0;
  const leb = () => {
    let v = 0;
    let shift = 0;
    for (;;) {
      const c = b[p++];
      v += (c & 0x7f) * 2 ** shift;
      shift += 7;
      if (c < 0x80) return v;
    }
  };
  return {
    string: () => {
      const n = leb();
      const s = b.subarray(p, p + n).toString('utf8');
      p += n;
      return s;
    },
    int64: () => {
      const v = b.readBigInt64LE(p);
      p += 8;
      return Number(v);
    },
    uint64: () => {
      const v = b.readBigUInt64LE(p);
      p += 8;
      return Number(v);
    },
    bytes: (n: number) => {
      const v = b.subarray(p, p + n);
      p += n;
      return v;
    },
    get done() {
      return p === b.length;
    },
  };
}

describe('RowBinaryBuffer', () => {
  it('writes strings with their UTF-8 length, across the length prefix sizes and the short ASCII path', () => {
    const samples = ['', 'a', 'x'.repeat(127), 'x'.repeat(128), 'é'.repeat(50), 'é'.repeat(64), 'ü'.repeat(5000), 'y'.repeat(16_384), '\u{1F600}'.repeat(3), `${'a'.repeat(60)}é`];
    const w = new RowBinaryBuffer(8); // tiny: every string makes it grow
    for (const s of samples) w.string(s);
    const r = reader(w.body());
    for (const s of samples) expect(r.string()).toBe(s);
    expect(r.done).toBe(true);
  });

  it('writes a String from its UTF-8 bytes exactly as from its text', () => {
    const samples = ['', 'a', 'é'.repeat(64), 'ü'.repeat(5000), '\u{1F600}'.repeat(3), 'y'.repeat(300_000)];
    const fromText = new RowBinaryBuffer(8);
    const fromBytes = new RowBinaryBuffer(8);
    for (const s of samples) {
      fromText.string(s);
      fromBytes.utf8(Buffer.from(s, 'utf8'));
    }
    expect(fromBytes.body().equals(fromText.body())).toBe(true);
    const r = reader(fromBytes.body());
    for (const s of samples) expect(r.string()).toBe(s);
    expect(r.done).toBe(true);
  });

  it('writes integers little-endian, negative Int64 and UInt64 beyond 32 bits included', () => {
    const w = new RowBinaryBuffer(4);
    for (const v of [0, 1, -1, -5_364_662_400_000_000, 1_795_589_762_882_000, 2 ** 40 + 7]) w.int64(v);
    for (const v of [0, 42, 1_795_589_762_895_078, 2 ** 33]) w.uint64(v);
    w.uint64(-3); // clamped to 0
    const r = reader(w.body());
    for (const v of [0, 1, -1, -5_364_662_400_000_000, 1_795_589_762_882_000, 2 ** 40 + 7]) expect(r.int64()).toBe(v);
    for (const v of [0, 42, 1_795_589_762_895_078, 2 ** 33, 0]) expect(r.uint64()).toBe(v);
    expect(r.done).toBe(true);
  });

  it('writes a UUID as its two halves, each little-endian, from either case; refuses anything else', () => {
    const w = new RowBinaryBuffer(1);
    w.uuid('01234567-89ab-cdef-0123-456789abcdef');
    w.uuid('01234567-89AB-CDEF-0123-456789ABCDEF');
    expect(w.body().subarray(0, 16).toString('hex')).toBe('efcdab8967452301efcdab8967452301');
    expect(w.body().subarray(16).toString('hex')).toBe('efcdab8967452301efcdab8967452301');
    const mark = w.mark();
    for (const bad of ['01234567-89ab-cdef-0123-456789abcdeg', '0123456789abcdef0123456789abcdef', '01234567-89ab-cdef-0123-456789abcdé', '']) {
      expect(() => w.uuid(bad)).toThrow('not a UUID');
    }
    expect(w.mark()).toBe(mark);
  });

  it('rewinds to a mark, and clear keeps the memory for the next rows', () => {
    const w = new RowBinaryBuffer(64);
    w.string('kept');
    const mark = w.mark();
    w.string('dropped');
    w.rewind(mark);
    expect(reader(w.body()).string()).toBe('kept');
    const capacity = w.capacity;
    w.clear();
    expect(w.body().length).toBe(0);
    expect(w.capacity).toBe(capacity);
  });
});
