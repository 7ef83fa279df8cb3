/** Browser code of the benches, bundled at bench time by esbuild (no build step of the project). */
import fs from "node:fs/promises";
import path from "node:path";
import { build } from "esbuild";

/** One browser entry as an IIFE, minified unless asked (a profile's names), the project's `@/` imports resolved. */
export async function bundle(entry: string, { minify = true } = {}): Promise<string> {
  const result = await build({
    entryPoints: [path.resolve(entry)],
    bundle: true,
    write: false,
    format: "iife",
    platform: "browser",
    target: "es2022",
    minify,
    logLevel: "error",
    alias: { "@": path.resolve(".") },
  });
  return result.outputFiles[0]!.text;
}

/** The typing page (bench/lib/typing-page.ts): its bundle and xterm's stylesheet in one document. */
export async function typingPageHtml({ minify = true } = {}): Promise<string> {
  const css = await fs.readFile(path.resolve("node_modules/@xterm/xterm/css/xterm.css"), "utf8");
  const script = await bundle("bench/lib/typing-page.ts", { minify });
  return `<!doctype html><html><head><meta charset="utf-8"><style>${css} body{margin:0;background:#0b1020}#term{width:1100px;height:760px}</style></head><body><div id="term"></div><script>${script}</script></body></html>`;
}
