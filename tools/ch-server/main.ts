/**
 * Standalone ClickHouse-over-chDB HTTP server, so several processes can share one
 * engine (chDB binds a data directory to a single process).
 *
 *   node dist/tools/ch-server/main.js --data-dir <dir> [--port <port>]
 *
 * Prints `listening <url>` on stdout once it accepts requests; exits cleanly on
 * SIGTERM/SIGINT.
 */
// A relative import on purpose: this entry point is run as plain `node dist/tools/ch-server/main.js`
// (spawned by tests and scripts), where no @th/* alias resolver is installed.
// eslint-disable-next-line no-restricted-imports
import { startClickHouseHttpServer } from '../../libs/testing/src/clickhouse-http-server';

interface CliOptions {
  dataDir: string;
  port?: number;
}

function usage(message: string): never {
  process.stderr.write(`${message}\nusage: main.js --data-dir <dir> [--port <port>]\n`);
  process.exit(2);
}

function parseArgs(argv: readonly string[]): CliOptions {
  let dataDir: string | undefined;
  let port: number | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    const [flag, inline] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const value = (): string => {
      const v = inline ?? argv[++i];
      if (v === undefined || v === '') usage(`missing value for ${flag}`);
      return v;
    };
    if (flag === '--data-dir') dataDir = value();
    else if (flag === '--port') {
      const n = Number(value());
      if (!Number.isInteger(n) || n < 0 || n > 65535) usage(`invalid port: ${String(n)}`);
      port = n;
    } else if (flag === '--help' || flag === '-h') usage('');
    else usage(`unknown argument: ${arg}`);
  }
  if (dataDir === undefined) usage('--data-dir is required');
  return { dataDir, port };
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const server = await startClickHouseHttpServer(opts);
  process.stdout.write(`listening ${server.url}\n`);

  let stopping = false;
  const shutdown = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    server.close().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`ch-server: error while closing on ${signal}: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}

main().catch((err: unknown) => {
  process.stderr.write(`ch-server: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
