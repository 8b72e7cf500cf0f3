import { Injectable } from '@nestjs/common';
import type { Identity } from '@th/contracts';
import { DomainError, ErrorCode, EventLoopPacer } from '@th/platform';
import { IngestService } from '../ingest.service';
import { decodeOtlpJsonPaced, decodeOtlpProtobuf, encodeOtlpResponse } from './otlp-decode';
import { spansToRunsPaced } from './otlp-map';

export type OtlpEncoding = 'protobuf' | 'json';

export function otlpEncodingOf(contentType: string | undefined): OtlpEncoding {
  const type = String(contentType ?? '').split(';')[0].trim().toLowerCase();
  if (type === 'application/x-protobuf' || type === 'application/protobuf') return 'protobuf';
  if (type === 'application/json' || type === '') return 'json';
  throw new DomainError(ErrorCode.UnsupportedMediaType, `Unsupported content type "${type}": send OTLP as application/x-protobuf or application/json`);
}

/** POST /otel/v1/traces: OTLP spans become runs and go down the same ingest path as POST /runs/batch. */
@Injectable()
export class OtelService {
  constructor(private readonly ingest: IngestService) {}

  async traces(identity: Identity, encoding: OtlpEncoding, raw: Buffer | undefined, parsed: unknown, project?: string): Promise<Buffer | Record<string, unknown>> {
    // One pacer for the request: decoding and mapping 25 MB of spans take many slices.
    const pacer = new EventLoopPacer();
    const request = encoding === 'protobuf' ? decodeOtlpProtobuf(raw ?? Buffer.alloc(0)) : await decodeOtlpJsonPaced(parsed, pacer);
    const runs = await spansToRunsPaced(request, { project }, pacer);
    await this.ingest.ingest(identity, runs, []);
    return encoding === 'protobuf' ? encodeOtlpResponse() : { partialSuccess: {} };
  }
}
