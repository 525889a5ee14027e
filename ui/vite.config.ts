// The build the server embeds (crates/quarry-server/src/ui.rs): `dist/index.html`, served at
// `/`, and content-hashed assets under `/ui/assets/`. Committed, so `cargo build` needs no
// npm; CI rebuilds it and fails if it differs, so the build must be deterministic: no
// timestamps, no source maps with absolute paths, one entry chunk.
import { defineConfig, type Plugin } from 'vite';

/** The stylesheet inlined into index.html: the page paints as soon as the HTML is parsed,
 * without waiting for a second request (the script, deferred, does not block painting). */
function inlineCss(): Plugin {
  return {
    name: 'quarry-inline-css',
    apply: 'build',
    enforce: 'post',
    generateBundle(_options, bundle) {
      const html = bundle['index.html'];
      if (!html || html.type !== 'asset') return;
      let text = String(html.source);
      for (const [name, chunk] of Object.entries(bundle)) {
        if (chunk.type !== 'asset' || !name.endsWith('.css')) continue;
        const link = new RegExp(`<link rel="stylesheet"[^>]*href="/ui/${name.replace(/[.]/g, '\\.')}"[^>]*>`);
        if (!link.test(text)) continue;
        text = text.replace(link, () => `<style>${String(chunk.source).trim()}</style>`);
        delete bundle[name];
      }
      html.source = text;
    },
  };
}

export default defineConfig({
  base: '/ui/',
  plugins: [inlineCss()],
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
