import { CsvError, parseCsv } from './csv';

describe('parseCsv', () => {
  it('reads plain, quoted, multi-line and empty fields with LF or CRLF line ends and a BOM', () => {
    expect(parseCsv('a,b\n1,2\n', 10)).toEqual([['a', 'b'], ['1', '2']]);
    expect(parseCsv('a,b\r\n"x, y","he said ""hi"""\r\n\r\n3,\n', 10)).toEqual([['a', 'b'], ['x, y', 'he said "hi"'], ['3', '']]);
    expect(parseCsv('a\n"multi\nline"\n', 10)).toEqual([['a'], ['multi\nline']]);
    expect(parseCsv('\ufeffa,b\n1,2', 10)).toEqual([['a', 'b'], ['1', '2']]);
    expect(parseCsv('a,b\n,\n"",x\n', 10)).toEqual([['a', 'b'], ['', ''], ['', 'x']]);
  });

  it('refuses ragged rows, unclosed quotes, stray quotes and too many rows, naming the line', () => {
    const err = (t: string, max = 10): CsvError => {
      try {
        parseCsv(t, max);
      } catch (e) {
        return e as CsvError;
      }
      throw new Error(`no error for ${JSON.stringify(t)}`);
    };
    expect(err('a,b\n1\n')).toMatchObject({ line: 2, message: 'line 2 has 1 fields; the header has 2' });
    expect(err('a\n"open\nmore')).toMatchObject({ line: 2 });
    expect(err('a\n"x"y\n').message).toMatch(/after a closing quote/);
    expect(err('a\nx"y\n').message).toMatch(/quote inside an unquoted field/);
    expect(err('a\n1\n2\n3\n', 2).message).toMatch(/more than 2 rows/);
  });
});
