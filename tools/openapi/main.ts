import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_SERVICE_VERSION } from '@th/config';
import { buildOpenApiDocument } from '@th/gateway';

// Writes (--write) or checks the committed gateway OpenAPI document generated from libs/contracts.
const target = join(__dirname, '..', '..', '..', 'apps', 'gateway', 'openapi.json');
const doc = JSON.stringify(buildOpenApiDocument(DEFAULT_SERVICE_VERSION), null, 2) + '\n';
if (process.argv.includes('--write')) {
  writeFileSync(target, doc);
  process.stdout.write(`wrote ${target}\n`);
} else if (readFileSync(target, 'utf8') !== doc) {
  process.stderr.write('apps/gateway/openapi.json is out of date: run `npm run openapi`\n');
  process.exit(1);
}
