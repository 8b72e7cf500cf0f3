// Starts the peer: @langchain/langgraph-api's in-memory server (what `langgraphjs dev` runs) on the echo graph.
// usage: node start.mjs <port> <jobsPerWorker>
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '@langchain/langgraph-api/server';

const [port, jobs] = process.argv.slice(2);
const cwd = dirname(fileURLToPath(import.meta.url));
const { host } = await startServer({
  port: Number(port),
  nWorkers: Number(jobs ?? 10),
  host: '127.0.0.1',
  cwd,
  graphs: { echo: './graphs/echo.js:echo' },
});
process.stdout.write(`peer listening on ${host}\n`);
