/// <reference types="vitest/config" />
// The bundle goes into the Python package with fixed names (no content hashes): the Python side
// inlines it into `--html` pages and serves it, and CI rebuilds it to check it matches the sources.
// `npm test` (Vitest) reads this file too: the tests beside the code (*.test.ts) run under Node;
// only what main.ts imports is bundled, so they never reach the bundle.
import { defineConfig } from "vite";

export default defineConfig({
  base: "./",
  build: {
    outDir: "../deuteron/web/static",
    emptyOutDir: true,
    target: "es2022",
    modulePreload: false,
    cssCodeSplit: false,
    reportCompressedSize: false,
    rollupOptions: {
      input: "src/main.ts",
      output: {
        format: "iife",
        entryFileNames: "app.js",
        assetFileNames: "app[extname]",
        inlineDynamicImports: true,
      },
    },
  },
  test: {
    include: ["src/**/*.test.ts"],
    environment: "node",
  },
});
