/** A CSV error at a 1-based line of the file. */
export class CsvError extends Error {
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(message);
  }
}

/**
 * Parses RFC 4180 CSV: comma separated, fields optionally in double quotes ("" inside quotes is a quote; quoted
 * fields may hold commas and line breaks), CRLF or LF line ends, an optional UTF-8 byte order mark. Blank lines are
 * skipped. Every record must have as many fields as the first (the header).
 */
export function parseCsv(text: string, maxRecords: number): string[][] {
  const s = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let quoted = false;
  let fieldStarted = false;
  let afterQuote = false;
  let line = 1;
  let recordLine = 1;
  const endRecord = () => {
    record.push(field);
    if (!(record.length === 1 && record[0] === '' && !fieldStarted)) {
      if (records.length > 0 && record.length !== records[0].length) {
        throw new CsvError(`line ${recordLine} has ${record.length} fields; the header has ${records[0].length}`, recordLine);
      }
      if (records.length > maxRecords) throw new CsvError(`the file has more than ${maxRecords} rows`, recordLine);
      records.push(record);
    }
    record = [];
    field = '';
    fieldStarted = false;
    afterQuote = false;
  };
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (quoted) {
      if (c === '"') {
        if (s[i + 1] === '"') {
          field += '"';
          i++;
        } else {
          quoted = false;
          afterQuote = true;
        }
      } else {
        if (c === '\n') line++;
        field += c;
      }
      continue;
    }
    if (afterQuote && c !== ',' && c !== '\n' && c !== '\r') throw new CsvError(`line ${line}: text after a closing quote`, line);
    if (c === '"') {
      if (field !== '') throw new CsvError(`line ${line}: a quote inside an unquoted field`, line);
      quoted = true;
      fieldStarted = true;
    } else if (c === ',') {
      record.push(field);
      field = '';
      fieldStarted = true;
      afterQuote = false;
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && s[i + 1] === '\n') i++;
      endRecord();
      line++;
      recordLine = line;
    } else {
      field += c;
      fieldStarted = true;
    }
  }
  if (quoted) throw new CsvError(`line ${recordLine}: a quoted field is not closed`, recordLine);
  if (field !== '' || record.length > 0 || fieldStarted) endRecord();
  return records;
}
