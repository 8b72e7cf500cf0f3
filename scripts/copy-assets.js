// Copies non-TS runtime assets (ClickHouse migrations) next to the compiled code.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const root = path.resolve(__dirname, '..');
const pairs = [['libs/clickhouse/src/migrations', 'dist/libs/clickhouse/src/migrations']];
for (const [from, to] of pairs) {
  fs.mkdirSync(path.join(root, to), { recursive: true });
  for (const f of fs.readdirSync(path.join(root, from))) {
    if (f.endsWith('.sql')) fs.copyFileSync(path.join(root, from, f), path.join(root, to, f));
  }
}
// The official OTLP .proto files (scripts/otel/fetch-proto.sh), next to the compiled OTLP decoder.
const protoSrc = path.join(root, '.cache', 'otel-proto');
if (fs.existsSync(path.join(protoSrc, 'opentelemetry'))) {
  fs.cpSync(path.join(protoSrc, 'opentelemetry'), path.join(root, 'dist/libs/ingest/src/otel/proto/opentelemetry'), { recursive: true });
}
