// The web app's build: dist/web/index.html and content-hashed files under dist/web/assets/, served by
// the standalone service and the gateway (libs/platform web-app.ts). Types from @th/contracts are
// imported with `import type` only, so no alias is needed and no server code can reach the bundle.
import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  base: '/',
  plugins: [react()],
  logLevel: 'warn',
  build: {
    outDir: fileURLToPath(new URL('../../dist/web', import.meta.url)),
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    target: 'es2022',
    // No inline <script>: the pages' Content-Security-Policy allows scripts from 'self' only.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
  },
});
