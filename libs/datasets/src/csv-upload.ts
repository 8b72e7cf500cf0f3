import { Controller, HttpCode, Post, Req } from '@nestjs/common';
import { datasetCsvUploadSchema, type Dataset, type DatasetCsvUpload, type ExampleCreate, type Identity, type ValidationErrorItem } from '@th/contracts';
import { AuditPublisher, TrackedOperation } from '@th/audit-client';
import { CurrentIdentity } from '@th/auth';
import { ValidationFailed, parseOrThrow, type RawBodyRequest, multipartBoundary, parseMultipartOr422, textProblem } from '@th/platform';
import { CsvError, parseCsv } from './csv';
import { DatasetsService } from './datasets.service';
import { DatasetsStore } from './datasets.store';
import { ExamplesService } from './examples.service';

/** Rows of one CSV upload at most (the body is bounded by MAX_BODY_BYTES as well). */
export const CSV_MAX_ROWS = 50_000;

export interface CsvUpload extends DatasetCsvUpload {
  file: Buffer;
  filename?: string;
}

/** Reads the multipart form of POST /datasets/upload. */
export async function csvUploadFromMultipart(contentType: string | undefined, raw: Buffer | undefined): Promise<CsvUpload> {
  const boundary = multipartBoundary(contentType);
  if (!boundary || !raw) throw new ValidationFailed([{ loc: ['body'], msg: 'expected a multipart/form-data body', type: 'value_error' }]);
  const parts = await parseMultipartOr422(raw, boundary);
  const fields: Record<string, unknown> = {};
  let file: { data: Buffer; filename?: string } | undefined;
  for (const p of parts) {
    if (p.name === 'file') {
      if (file) throw new ValidationFailed([{ loc: ['body', 'file'], msg: 'give one file', type: 'value_error' }]);
      file = { data: Buffer.from(p.data), filename: p.filename };
    } else if (p.name === 'input_keys' || p.name === 'output_keys') {
      fields[p.name] = [...((fields[p.name] as string[] | undefined) ?? []), p.data.toString('utf8')];
    } else if (p.name === 'name' || p.name === 'description' || p.name === 'data_type') {
      fields[p.name] = p.data.toString('utf8');
    }
  }
  if (!file) throw new ValidationFailed([{ loc: ['body', 'file'], msg: 'Field required: the CSV file', type: 'missing' }]);
  if (fields.name === undefined && file.filename) fields.name = file.filename.replace(/\.csv$/i, '');
  return { ...parseOrThrow(datasetCsvUploadSchema, fields, ['body']), file: file.data, filename: file.filename };
}

/** Examples of a CSV: each row's input_keys columns become its inputs, output_keys columns its outputs (strings). */
export function examplesFromCsv(upload: CsvUpload): ExampleCreate[] {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(upload.file);
  } catch {
    throw new ValidationFailed([{ loc: ['body', 'file'], msg: 'the CSV file is not UTF-8 text', type: 'value_error' }]);
  }
  // Valid UTF-8 has no lone surrogate, but it may hold NUL, which the examples' jsonb refuses.
  const unstorable = textProblem(text);
  if (unstorable) throw new ValidationFailed([{ loc: ['body', 'file'], ...unstorable }]);
  let records: string[][];
  try {
    records = parseCsv(text, CSV_MAX_ROWS);
  } catch (err) {
    if (err instanceof CsvError) throw new ValidationFailed([{ loc: ['body', 'file', `line ${err.line}`], msg: err.message, type: 'value_error' }]);
    throw err;
  }
  const header = records[0];
  if (!header) throw new ValidationFailed([{ loc: ['body', 'file'], msg: 'the CSV file is empty: it needs a header row', type: 'value_error' }]);
  const errors: ValidationErrorItem[] = [];
  const dup = header.find((h, i) => header.indexOf(h) !== i);
  if (dup !== undefined) errors.push({ loc: ['body', 'file', 'line 1'], msg: `column "${dup}" appears twice in the header`, type: 'value_error' });
  const column = (key: string, loc: (string | number)[]): number => {
    const i = header.indexOf(key);
    if (i < 0) errors.push({ loc, msg: `column "${key}" is not in the CSV header`, type: 'value_error' });
    return i;
  };
  const inputs = upload.input_keys.map((k, i) => [k, column(k, ['body', 'input_keys', i])] as const);
  const outputs = upload.output_keys.map((k, i) => [k, column(k, ['body', 'output_keys', i])] as const);
  if (errors.length > 0) throw new ValidationFailed(errors);
  return records.slice(1).map((r) => ({
    inputs: Object.fromEntries(inputs.map(([k, i]) => [k, r[i]])),
    outputs: outputs.length > 0 ? Object.fromEntries(outputs.map(([k, i]) => [k, r[i]])) : null,
  }));
}

/** POST /datasets/upload: a dataset made from a CSV file, all or nothing. */
@Controller('datasets')
export class CsvUploadController {
  constructor(
    private readonly datasets: DatasetsService,
    private readonly examples: ExamplesService,
    private readonly store: DatasetsStore,
    private readonly audit: AuditPublisher,
  ) {}

  @Post('upload')
  @TrackedOperation()
  @HttpCode(200)
  async upload(@CurrentIdentity() identity: Identity, @Req() req: RawBodyRequest): Promise<Dataset> {
    const upload = await csvUploadFromMultipart(req.headers['content-type'], req.rawBody);
    if (!upload.name) throw new ValidationFailed([{ loc: ['body', 'name'], msg: 'Field required (or give the file a name)', type: 'missing' }]);
    const name = upload.name;
    const examples = examplesFromCsv(upload);
    return this.audit.track(
      { identity, resources: [] },
      () =>
        this.store.inTx(undefined, async (m) => {
          const d = await this.datasets.create(identity, { name, description: upload.description ?? null, data_type: upload.data_type ?? 'kv' }, { manager: m });
          if (examples.length > 0) await this.examples.createMany(identity, d.id, examples, { manager: m, locOf: (i) => ['body', 'file', `row ${i + 1}`] });
          return this.datasets.row(identity, d.id, m).then((row) => ({ ...d, example_count: row.example_count, modified_at: row.modified_at.toISOString() }));
        }),
      (d) => [{ type: 'dataset', id: d.id }],
    );
  }
}
