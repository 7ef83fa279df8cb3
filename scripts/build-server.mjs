/**
 * Builds the production server (server.ts and what it imports) into one ES module,
 * dist/server.mjs, with the npm packages left as imports. Node then loads one file instead of
 * having tsx transform ~300 TypeScript modules at every start: a restart listens seconds sooner
 * (bench/README.md). Files that find their neighbours with `import.meta.url` (the holder, the
 * check library, the database watchdog, Prisma's generated client) keep finding them: each such
 * use is rewritten to the URL of its source file, relative to the bundle.
 *
 *   node scripts/build-server.mjs        (npm run build runs it after next build)
 */
import fs from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const outfile = path.join(root, "dist", "server.mjs");

/** `import.meta.url` in a project file: the source file's URL, reached from the bundle. */
const sourceUrls = {
  name: "source-import-meta-url",
  setup(esbuild) {
    esbuild.onLoad({ filter: /\.(ts|tsx|mts|mjs|js)$/ }, async (args) => {
      if (args.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
      const text = await fs.readFile(args.path, "utf8");
      if (!text.includes("import.meta.url")) return undefined;
      const relative = path.relative(path.dirname(outfile), args.path).split(path.sep).join("/");
      const url = `new URL(${JSON.stringify(relative)}, import.meta.url).href`;
      const ext = path.extname(args.path).slice(1);
      return { contents: text.replaceAll("import.meta.url", url), loader: ext === "mts" || ext === "mjs" ? "js" : ext };
    });
  },
};

await build({
  entryPoints: [path.join(root, "server.ts")],
  outfile,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  packages: "external",
  sourcemap: "linked",
  logLevel: "warning",
  plugins: [sourceUrls],
  // Bundled CommonJS helpers (none expected) would need require: give the module one.
  banner: { js: 'import { createRequire as __labdeckRequire } from "node:module"; const require = __labdeckRequire(import.meta.url);' },
});
console.log(`server bundle: ${path.relative(root, outfile)}`);
