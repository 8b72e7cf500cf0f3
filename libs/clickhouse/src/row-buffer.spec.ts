import { RowBuffer } from './row-buffer';

describe('RowBuffer', () => {
  it('joins lines with newlines as UTF-8, growing as needed', () => {
    const b = new RowBuffer(8);
    const lines = ['["a",1]', '["Grüße 😀",2]', 'x'.repeat(100)];
    for (const l of lines) b.push(l);
    expect(b.count).toBe(3);
    expect(b.body().toString('utf8')).toBe(lines.join('\n'));
    expect(b.capacity).toBeGreaterThanOrEqual(b.body().length);
  });

  it('does not grow for a line that fits, even when three bytes per character would not', () => {
    const b = new RowBuffer(100);
    b.push('y'.repeat(60)); // 60 bytes; 3 per character would be 180
    expect(b.capacity).toBe(100);
    b.push('z'.repeat(38)); // 1 + 38 more: 99 bytes
    expect(b.capacity).toBe(100);
    expect(b.body().length).toBe(99);
    b.push('é'); // two bytes more: must grow
    expect(b.capacity).toBeGreaterThan(100);
    expect(b.body().toString('utf8')).toBe(`${'y'.repeat(60)}\n${'z'.repeat(38)}\né`);
  });

  it('clear() keeps the memory and starts over', () => {
    const b = new RowBuffer(16);
    b.push('first line that grows the buffer');
    const cap = b.capacity;
    b.clear();
    expect(b.count).toBe(0);
    expect(b.body().length).toBe(0);
    b.push('second');
    expect(b.capacity).toBe(cap);
    expect(b.body().toString()).toBe('second');
  });
});
