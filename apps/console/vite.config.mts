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
    // The typed client from its TypeScript source (an ES module graph the bundler can shake), not its CommonJS build.
    alias: { '@secsvc/client': fileURLToPath(new URL('../../libs/client/src/index.ts', import.meta.url)) },
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
