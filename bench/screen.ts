/**
 * Memory of the headless screens (server/terminal/screen.ts) the gateway keeps per live terminal
 * for snapshots: RSS and JS heap of N screens filled with coloured lines (scrollback full), beside
 * the same process before any screen (the baseline, same run). Also the time of one snapshot.
 *   npx tsx --expose-gc bench/screen.ts [--terminals 50]
 */
import { z } from "zod";
import { Screen, SCREEN_SCROLLBACK_LINES } from "../server/terminal/screen";
import { benchFlags } from "./lib/flags";

const flags = benchFlags(
  z.object({ terminals: z.coerce.number().int().min(1).max(1000).default(50) }),
  "usage: npx tsx --expose-gc bench/screen.ts [--terminals N]",
);
const COUNT = flags.terminals; // screens to fill
const COLS = 120; // characters per line
const ROWS = 40; // lines on screen
const MIB = 1024 * 1024; // bytes
const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);

function line(i: number): string {
  return `\x1b[32m${String(i).padStart(6, "0")}\x1b[0m ${"abcdefghij".repeat(11)}\r\n`;
}

gc();
const before = process.memoryUsage();
const screens: Screen[] = [];
let snapshotMs = 0;
let snapshotChars = 0;
for (let k = 0; k < COUNT; k++) {
  const screen = new Screen({ cols: COLS, rows: ROWS });
  let data = "";
  for (let i = 0; i < SCREEN_SCROLLBACK_LINES + ROWS + 200; i++) data += line(i);
  const bytes = Buffer.from(data);
  screen.write(0, bytes);
  const t = performance.now();
  const snap = await screen.snapshot();
  snapshotMs += performance.now() - t;
  snapshotChars += snap.data.length;
  screens.push(screen);
}
gc();
const after = process.memoryUsage();
console.log(`headless screens: ${COUNT} × ${COLS}x${ROWS}, scrollback ${SCREEN_SCROLLBACK_LINES} lines (full)`);
console.log(
  `  RSS  baseline ${(before.rss / MIB).toFixed(1)} MiB -> ${(after.rss / MIB).toFixed(1)} MiB: ${((after.rss - before.rss) / COUNT / MIB).toFixed(2)} MiB per terminal`,
);
console.log(
  `  heap baseline ${(before.heapUsed / MIB).toFixed(1)} MiB -> ${(after.heapUsed / MIB).toFixed(1)} MiB: ${((after.heapUsed - before.heapUsed) / COUNT / MIB).toFixed(2)} MiB per terminal`,
);
console.log(
  `  snapshot (parse pending + serialize): ${(snapshotMs / COUNT).toFixed(1)} ms, ${(snapshotChars / COUNT / 1024).toFixed(0)} KiB each`,
);
for (const s of screens) s.dispose();
