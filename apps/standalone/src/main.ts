import 'reflect-metadata';
import { loadConfig } from '@th/config';
import { standaloneConfigSchema } from './config';
import { SIGN_IN_LINK_TTL_MS, startStandalone } from './standalone';

async function main(): Promise<void> {
  const config = loadConfig(standaloneConfigSchema, process.env);
  const running = await startStandalone(config);
  if (config.PRINT_BANNER) {
    process.stdout.write(
      `\nTracehouse is running at ${running.url}\n` +
        `  Open the app: ${running.signInLink()}\n` +
        (running.linkUrl ? `  The SDK's links (${running.linkUrl}) open the app too.\n` : '') +
        `                (signs you in once, within ${SIGN_IN_LINK_TTL_MS / 60_000} minutes; later, sign in with the API key)\n` +
        `  API key:      ${running.apiKey}\n` +
        `  Workspace id: ${running.workspaceId}\n` +
        `  Data:         ${config.DATA_DIR}\n\n` +
        `  export LANGSMITH_ENDPOINT=${running.url} LANGSMITH_API_KEY=${running.apiKey}\n\n`,
    );
  }
  const stop = (signal: string) => {
    process.stdout.write(JSON.stringify({ level: 'info', msg: `received ${signal}, shutting down` }) + '\n');
    running.close().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(String(err) + '\n');
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
