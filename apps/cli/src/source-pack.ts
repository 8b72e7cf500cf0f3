import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import * as tar from 'tar';
import { UsageError } from './errors';

/** Never packed: version control, installed dependencies (the build installs them) and local secrets (use --env-file). */
const SKIPPED = new Set(['.git', 'node_modules', '.env']);

/** A folder as the control plane's upload expects it: a gzipped tarball of its contents, paths relative to the folder. */
export async function packFolder(dir: string): Promise<{ data: Buffer; files: number }> {
  let entries: string[];
  try {
    if (!statSync(dir).isDirectory()) throw new UsageError(`${dir} is not a folder`);
    entries = readdirSync(dir).filter((e) => !SKIPPED.has(e)).sort();
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`cannot read the folder ${dir}: ${(err as Error).message}`);
  }
  let files = 0;
  const stream = tar.c(
    {
      gzip: true,
      cwd: dir,
      portable: true,
      filter: (path, stat) => {
        if (SKIPPED.has(basename(path))) return false;
        if ('isFile' in stat && stat.isFile()) files++;
        return true;
      },
    },
    entries,
  );
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
  return { data: Buffer.concat(chunks), files };
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * A dotenv file: `KEY=VALUE` lines, `#` comments, an optional `export ` prefix, values optionally in single or double
 * quotes (double quotes understand \n). No interpolation.
 */
export function parseEnvFile(path: string): Map<string, string> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read --env-file ${path}: ${(err as Error).message}`);
  }
  const out = new Map<string, string>();
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const m = /^(?:export\s+)?([^=\s]+)\s*=\s*(.*)$/.exec(line);
    if (!m || !ENV_NAME.test(m[1])) throw new UsageError(`${path}:${i + 1}: expected KEY=VALUE`);
    let value = m[2];
    const quote = value[0];
    if ((quote === '"' || quote === "'") && value.endsWith(quote) && value.length >= 2) {
      value = value.slice(1, -1);
      if (quote === '"') value = value.replace(/\\n/g, '\n').replace(/\\"/g, '"');
    } else {
      value = value.replace(/\s+#.*$/, '');
    }
    out.set(m[1], value);
  });
  return out;
}

/** --env-file first, then each --secret KEY=VALUE (later ones win). */
export function collectSecrets(envFile: string | undefined, pairs: string[]): { name: string; value: string }[] | undefined {
  if (!envFile && pairs.length === 0) return undefined;
  const all = envFile ? parseEnvFile(envFile) : new Map<string, string>();
  for (const p of pairs) {
    const at = p.indexOf('=');
    if (at <= 0 || !ENV_NAME.test(p.slice(0, at))) throw new UsageError(`--secret expects KEY=VALUE with KEY an environment variable name, not ${JSON.stringify(p.split('=')[0])}`);
    all.set(p.slice(0, at), p.slice(at + 1));
  }
  return [...all].map(([name, value]) => ({ name, value }));
}

export const folderName = (dir: string) => basename(resolve(dir));
