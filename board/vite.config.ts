import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The board (spec 08) is built once, with the package, into dist/board: `gaffer serve` serves those
// files as they are, so nothing is built at run time and nothing is fetched beyond the gaffer server.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  resolve: { alias: { react: 'preact/compat', 'react-dom': 'preact/compat' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/board', import.meta.url)),
    emptyOutDir: true,
    // no inline data: URLs, so the Content-Security-Policy can stay `self`
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 400,
  },
});
