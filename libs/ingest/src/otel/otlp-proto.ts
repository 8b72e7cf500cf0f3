import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as protobuf from 'protobufjs';

const SERVICE_PROTO = 'opentelemetry/proto/collector/trace/v1/trace_service.proto';

/**
 * Where the official OTLP .proto files are: next to the compiled code (scripts/copy-assets.js copies
 * them into dist), else in the repository's .cache/otel-proto (scripts/otel/fetch-proto.sh fetches them
 * from Maven Central, io.opentelemetry.proto:opentelemetry-proto).
 */
export function otlpProtoDir(): string {
  const beside = join(__dirname, 'proto');
  if (existsSync(join(beside, SERVICE_PROTO))) return beside;
  for (let dir = __dirname; ; dir = dirname(dir)) {
    const cached = join(dir, '.cache', 'otel-proto');
    if (existsSync(join(cached, SERVICE_PROTO))) return cached;
    if (dirname(dir) === dir) break;
  }
  throw new Error('The OTLP .proto files are missing: run scripts/otel/fetch-proto.sh (npm start and npm test do)');
}

export interface OtlpTypes {
  request: protobuf.Type;
  response: protobuf.Type;
}

let types: OtlpTypes | null = null;

/** ExportTraceServiceRequest/Response, loaded once with protobufjs from the official definitions. */
export function otlpTypes(): OtlpTypes {
  if (types) return types;
  const dir = otlpProtoDir();
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => join(dir, target);
  root.loadSync(SERVICE_PROTO);
  root.resolveAll();
  types = {
    request: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest'),
    response: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse'),
  };
  return types;
}
