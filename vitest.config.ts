import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  // The `@/` import prefix of tsconfig.json's paths, for modules shared with the browser.
  resolve: { alias: { "@/": fileURLToPath(new URL("./", import.meta.url)) } },
  test: {
    include: ["server/**/*.test.ts", "bench/**/*.test.ts", "components/**/*.test.ts", "scripts/**/*.test.ts", "e2e/firefox/**/*.test.ts"],
    testTimeout: 60000,
    hookTimeout: 60000,
    fileParallelism: false,
  },
});
