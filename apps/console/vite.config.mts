// The console is built to static files (dist/) that the gateway serves at /console (apps/gateway/src/console):
// asset URLs start with /console/, hashed file names (cached for a year), no inline script or style (the pages'
// Content-Security-Policy allows only files of the origin), nothing loaded from anywhere else.
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  base: '/console/',
  plugins: [react()],
  resolve: {
    alias: {
      // The typed client from its TypeScript source (an ES module graph the bundler can shake), not its CommonJS build.
      '@secsvc/client': fileURLToPath(new URL('../../libs/client/src/index.ts', import.meta.url)),
      // The product's event kinds: one file of @secsvc/shared without imports (the library's index is Node's).
      '@secsvc/shared/event-kinds': fileURLToPath(new URL('../../libs/shared/src/event-kinds.ts', import.meta.url)),
    },
  },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // No data: URLs for assets, no inline module-preload polyfill: every file is a file of the origin.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
    reportCompressedSize: false,
  },
});
