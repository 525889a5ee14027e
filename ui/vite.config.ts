// The build the server embeds (crates/quarry-server/src/ui.rs): `dist/index.html`, served at
// `/`, and content-hashed assets under `/ui/assets/`. Committed, so `cargo build` needs no
// npm; CI rebuilds it and fails if it differs, so the build must be deterministic: no
// timestamps, no source maps with absolute paths, one entry chunk.
import { defineConfig } from 'vite';

export default defineConfig({
  base: '/ui/',
  // `npm run dev`: the sources, with the API of a `quarry serve` on its default port.
  server: {
    proxy: { '/api': 'http://127.0.0.1:7380' },
  },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    modulePreload: { polyfill: false },
    cssCodeSplit: false,
    chunkSizeWarningLimit: 300,
  },
});
