/**
 * What a learner feels in the browser, in Debian Chromium: the real lab page
 * against the browser's floor, in one run, over the same server and the same machine's terminal.
 *
 *   lab     /labs/hello-terminal as a signed-in learner sees it (components/terminal/Terminal.tsx),
 *           probed through the page's terminal handle (window.__labdeck: onRender, cursorLine);
 *   floor   a minimal page on the same origin (fulfilled by Playwright): xterm.js with the same
 *           font and grid, xterm's default cursor (no blink), the same TerminalConnection to the
 *           same server's socket (bench/lib/typing-page.ts, floor=1). Same session, same shell.
 *
 * Measured per page, rounds interleaved (the order alternates):
 *   keystrokes  keydown (capture, xterm's textarea) to the first xterm render whose cursor row shows
 *               every key typed on it so far, at human pace (random gaps), into `cat`;
 *   bulk        `head -c N /dev/urandom | base64` from Enter to its end marker on screen, and the
 *               longest long-animation-frame meanwhile (PerformanceObserver: the page runs no
 *               requestAnimationFrame loop of its own, which would change what it measures),
 *               split into its scripts' time, its rendering and the rest (the main thread
 *               waiting: another task, or no CPU); and from a Chromium trace of the same bulk
 *               (bench/lib/frames.ts), each frame's main-thread CPU beside its wall time and the
 *               share of the main thread's task time spent waiting for a CPU, so that a long frame
 *               of the page's own work is told apart from a page starved of CPU (on this 2-core
 *               machine Chromium, the server, sshd and the holder share the cores).
 *
 * Renderer choice: --gpu swiftshader starts Chromium with software WebGL (this
 * machine has no GPU; SwiftShader stands in for one) and adds a third page, floor-webgl: the floor
 * page with xterm's WebGL renderer (@xterm/addon-webgl), beside the DOM renderer in the same
 * browser. The default (--gpu off) is the browser as CI and a GPU-less learner run it.
 *
 * --cpu-profile DIR writes a CPU profile of every bulk (the floor page's script unminified) to read
 * where the page's time goes; it found the harness's own end-marker poll reading all 5,000 rows
 * (30-70 ms a poll), which the bench now avoids (BULK_TAIL_ROWS).
 *
 * Starts its own app (e2e/serve.ts: netns sshd hosts, embedded PostgreSQL, server.ts in
 * production mode; run `next build` first). --mode short (CI) measures a little and fails only when it
 * cannot measure; the targets (lab ≈ floor) are the printed ratios, not an exit code.
 *
 *   flock /tmp/labdeck-test.lock npx tsx bench/browser-typing.ts [--keys 300] [--rounds 3] [--bulk-mib 4] [--mode full|short] [--cpu-profile DIR] [--json out.json]
 */
import fs from "node:fs/promises";
import { z } from "zod";
import { benchFlags } from "./lib/flags";

const SLUG = "hello-terminal";
const MACHINE = "controlplane";
/** Human pace: the gap between two keys is drawn from this range, ms. */
const GAP_MS = { min: 60, max: 220 };
/** Keys typed per line before Enter (a fresh line of `cat`). */
const LINE_KEYS = 40;
const PROMPT = /[#$][\s\u00a0]*$/;
const READY_MS = 120_000;
const BULK_TIMEOUT_MS = 300_000;
/** Rows read per poll for the bulk's end marker (the marker, the prompt after it, some base64 above). */
const BULK_TAIL_ROWS = 20;

const Flags = z.object({
  keys: z.coerce.number().int().min(10).max(20_000).default(300),
  rounds: z.coerce.number().int().min(1).max(50).default(3),
  "bulk-mib": z.coerce.number().min(0.1).max(256).default(4),
  /** short: CI's mode (40 keys, 1 round, 1 MiB). */
  mode: z.enum(["full", "short"]).default("full"),
  json: z.string().min(1).optional(),
  /** off: Chromium with --disable-gpu (DOM renderer only); swiftshader: software WebGL, and the floor page also with the WebGL renderer. */
  gpu: z.enum(["off", "swiftshader"]).default("off"),
  /** A directory: a Chromium CPU profile of every bulk (CDP Profiler, 100 µs samples), one .cpuprofile per page and round; the floor page's script unminified. */
  "cpu-profile": z.string().min(1).optional(),
});
const parsed = benchFlags(
  Flags,
  "usage: npx tsx bench/browser-typing.ts [--keys N] [--rounds N] [--bulk-mib N] [--mode full|short] [--gpu off|swiftshader] [--cpu-profile DIR] [--json FILE]",
);
const opts = parsed.mode === "short" ? { ...parsed, keys: 40, rounds: 1, "bulk-mib": 1 } : parsed;

process.env.LOG_LEVEL ??= "warn";
const { bundle, typingPageHtml } = await import("./lib/bundle");
const { chromium } = await import("playwright-core");
const { CHROMIUM_ARGS, CHROMIUM_PATH } = await import("../e2e/chromium");
const { signInNewUser, joinNewCohort } = await import("../e2e/accounts");
const { serveChild } = await import("../e2e/serve-child");
const m = await import("./lib/measure");
const { frameStats } = await import("./lib/frames");
type FrameStats = import("./lib/frames").FrameStats;
type Stats = import("./lib/measure").Stats;
type Page = import("playwright-core").Page;

/** What the longest frame was made of (long-animation-frame entries; zeros where only longtask exists). */
interface FrameParts {
  /** Sum of the frame's script entries (xterm's parser, the connection, React), ms. */
  scriptMs: number;
  /** From renderStart to the frame's end (rAF callbacks, style, layout, paint), ms. */
  renderMs: number;
  /** The frame's biggest script entries: what ran them (invoker) and for how long. */
  top: string;
}

declare global {
  interface Window {
    __frames?: { longest: number; parts: FrameParts; count: number; totalMs: number; reset(): void };
  }
}

interface PageResult {
  keys: Stats;
  lost: number;
  bulkMs: number[];
  longestFrameMs: number[];
  /** Per bulk, from its trace: the longest frame's main-thread CPU, the most CPU in any frame, the main thread's wait for a CPU. */
  frames: FrameStats[];
}

/** Adds the keystroke probe (bench/lib/lab-probe.ts) to the lab page once its terminal is mounted. */
async function probeLabPage(page: Page, probe: string): Promise<void> {
  await page.waitForFunction((machine) => Boolean(window.__labdeck?.terminals[machine]), MACHINE, { timeout: READY_MS, polling: 200 });
  await page.addScriptTag({ content: `document.currentScript.dataset.machine = ${JSON.stringify(MACHINE)};\n${probe}` });
}

/** Longest long-animation-frame (or long task, where LoAF is missing) since the last reset. */
async function watchFrames(page: Page): Promise<void> {
  await page.evaluate(() => {
    const none = () => ({ scriptMs: 0, renderMs: 0, top: "" });
    // count and totalMs: the frames over 50 ms (every long-animation-frame entry) and their time.
    const state = {
      longest: 0,
      parts: none(),
      count: 0,
      totalMs: 0,
      reset: () => ((state.longest = 0), (state.count = 0), (state.totalMs = 0), (state.parts = none())),
    };
    window.__frames = state;
    const type = PerformanceObserver.supportedEntryTypes.includes("long-animation-frame") ? "long-animation-frame" : "longtask";
    type LoAF = PerformanceEntry & { renderStart?: number; scripts?: { duration: number; invoker?: string; invokerType?: string }[] };
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries() as LoAF[]) {
        if (entry.duration > state.longest) {
          state.longest = entry.duration;
          const renderStart = entry.renderStart ?? 0;
          state.parts = {
            scriptMs: (entry.scripts ?? []).reduce((sum, script) => sum + script.duration, 0),
            renderMs: renderStart > 0 ? entry.startTime + entry.duration - renderStart : 0,
            top: [...(entry.scripts ?? [])]
              .sort((a, b) => b.duration - a.duration)
              .slice(0, 3)
              .map((script) => `${script.invokerType ?? "?"} ${String(script.invoker ?? "").slice(0, 40)} ${Math.round(script.duration)}`)
              .join("; "),
          };
        }
        state.count++;
        state.totalMs += entry.duration;
      }
    }).observe({ type, buffered: false });
  });
}

async function waitInPage(
  page: Page,
  what: string,
  test: (s: { status: string; text: string }) => boolean,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const state = await page.evaluate(() => {
      const b = (window as unknown as { __bench?: { status: string; text(): string } }).__bench;
      return { status: b?.status ?? "loading", text: b?.text() ?? "" };
    });
    if (test(state)) return;
    if (Date.now() > deadline)
      throw new Error(
        `no ${what} in the page within ${timeoutMs} ms: ${JSON.stringify({ ...state, text: state.text.trim().slice(-300) })}`,
      );
    await m.sleep(200);
  }
}

/** Gets the shell into `cat` (every key echoes as typed, no line editing), once per page load. */
async function intoCat(page: Page): Promise<void> {
  await waitInPage(page, "prompt", (s) => s.status === "connected" && PROMPT.test(s.text.trimEnd()), READY_MS);
  await page.keyboard.type("stty -echoctl; cat\n");
  await waitInPage(page, "cat", (s) => /cat\s*$/.test(s.text.trimEnd()), 20_000);
  await m.sleep(500);
  await page.evaluate(() => (window as unknown as { __bench: { newLine(): void } }).__bench.newLine());
}

async function typeKeys(page: Page, n: number, out: number[]): Promise<number> {
  const alphabet = "abcdefghijklmnopqrstuvwxyz";
  let lost = 0;
  for (let i = 0; i < n; i++) {
    await page.keyboard.press(alphabet[Math.floor(Math.random() * alphabet.length)]!);
    const ms = await page.evaluate(
      (t) => (window as unknown as { __bench: { waitGlyph(t: number): Promise<number | null> } }).__bench.waitGlyph(t),
      m.ECHO_TIMEOUT_MS,
    );
    if (ms === null) lost++;
    else out.push(ms);
    if ((i + 1) % LINE_KEYS === 0 || i === n - 1) {
      await page.keyboard.press("Enter");
      await m.sleep(m.SETTLE_MS);
      await page.evaluate(() => (window as unknown as { __bench: { newLine(): void } }).__bench.newLine());
    }
    await m.sleep(GAP_MS.min + Math.random() * (GAP_MS.max - GAP_MS.min));
  }
  return lost;
}

/** Leaves `cat`, prints N bytes of base64 and an end marker; ms from Enter to the marker on screen, and the longest frame meanwhile. */
async function bulk(
  page: Page,
  round: number,
  which: Which,
): Promise<{ ms: number; longestFrameMs: number; parts: FrameParts; longFrames: number; longFramesMs: number; frames: FrameStats }> {
  await page.keyboard.press("Control+D");
  await waitInPage(page, "prompt after cat", (s) => PROMPT.test(s.text.trimEnd()), 20_000);
  const bytes = Math.round(opts["bulk-mib"] * m.MIB);
  const marker = `BULK-${round}-${Math.floor(Math.random() * 1e6)}`;
  // The marker is built by the shell, so the command line itself does not contain it.
  const [head, tail] = [marker.slice(0, 5), marker.slice(5)];
  await page.keyboard.type(`head -c ${bytes} /dev/urandom | base64 -w 76; echo ${head}''${tail}`);
  await page.evaluate(() => window.__frames!.reset());
  const profiler = opts["cpu-profile"] ? await page.context().newCDPSession(page) : undefined;
  if (profiler) {
    await profiler.send("Profiler.enable");
    await profiler.send("Profiler.setSamplingInterval", { interval: 100 });
    await profiler.send("Profiler.start");
  }
  // The page's frames in wall time and in main-thread CPU (bench/lib/frames.ts): one trace at a time per browser.
  await browser!.startTracing(page, { categories: ["toplevel", "cc"] });
  const started = Date.now();
  await page.keyboard.press("Enter");
  const deadline = started + BULK_TIMEOUT_MS;
  for (;;) {
    // Only the last rows: the whole buffer (5,000 rows of scrollback) is 30-70 ms of the page's main thread, every poll.
    const done = await page.evaluate(
      ({ mk, rows }) => (window as unknown as { __bench: { text(lastRows: number): string } }).__bench.text(rows).includes(`\n${mk}`),
      { mk: marker, rows: BULK_TAIL_ROWS },
    );
    if (done) break;
    if (Date.now() > deadline) throw new Error(`bulk output did not end within ${BULK_TIMEOUT_MS} ms`);
    await m.sleep(50);
  }
  const ms = Date.now() - started;
  const frames = frameStats(JSON.parse((await browser!.stopTracing()).toString("utf8")));
  if (frames.frames < 2)
    throw new Error(`the trace of the ${which} page's bulk holds ${frames.frames} frame(s) of its main thread: cannot measure its frames`);
  if (profiler) {
    const { profile } = await profiler.send("Profiler.stop");
    const file = `${opts["cpu-profile"]}/${which}-round${round + 1}.cpuprofile`;
    await fs.mkdir(opts["cpu-profile"]!, { recursive: true });
    await fs.writeFile(file, JSON.stringify(profile));
    await profiler.detach();
    console.error(`CPU profile of the bulk: ${file}`);
  }
  const {
    longest: longestFrameMs,
    parts,
    longFrames,
    longFramesMs,
  } = await page.evaluate(() => ({
    longest: window.__frames!.longest,
    parts: window.__frames!.parts,
    longFrames: window.__frames!.count,
    longFramesMs: window.__frames!.totalMs,
  }));
  // A clear screen and scrollback for what follows (xterm's buffer is full of base64), then `cat` again.
  await page.keyboard.type("clear\n");
  await m.sleep(500);
  await page.keyboard.type("cat\n");
  await waitInPage(page, "cat", (s) => /cat\s*$/.test(s.text.trimEnd()), 20_000);
  await m.sleep(300);
  await page.evaluate(() => (window as unknown as { __bench: { newLine(): void } }).__bench.newLine());
  return { ms, longestFrameMs, parts, longFrames, longFramesMs, frames };
}

const t0 = Date.now();
const app = await serveChild();
const { baseURL } = app;
let browser: import("playwright-core").Browser | undefined;
type Which = "lab" | "floor" | "floor-webgl";
const pages: Which[] = opts.gpu === "swiftshader" ? ["floor", "floor-webgl", "lab"] : ["floor", "lab"];
/** Per page measured (floor-webgl only with --gpu swiftshader). */
const empty = (): PageResult => ({ keys: m.stats([]), lost: 0, bulkMs: [], longestFrameMs: [], frames: [] });
const results: Partial<Record<Which, PageResult>> & Record<"lab" | "floor", PageResult> = { lab: empty(), floor: empty() };
if (pages.includes("floor-webgl")) results["floor-webgl"] = empty();
try {
  // The floor page is fulfilled by Playwright, so Chromium takes it for a public page and refuses
  // its socket to loopback (Local Network Access): allowed, as in bench/typing-under-load.ts.
  // swiftshader: software WebGL (ANGLE on SwiftShader) instead of --disable-gpu.
  const gpuArgs = opts.gpu === "swiftshader" ? ["--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist"] : [];
  const args = [
    ...CHROMIUM_ARGS.filter((a) => opts.gpu === "off" || a !== "--disable-gpu"),
    ...gpuArgs,
    "--disable-features=LocalNetworkAccessChecks",
  ];
  browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args });
  const context = await browser.newContext({ baseURL, viewport: { width: 1400, height: 900 } });
  // tsx (esbuild keepNames) wraps the functions this file hands to page.evaluate in __name(...).
  await context.addInitScript("globalThis.__name = (f) => f;");
  const email = await signInNewUser(context, baseURL);
  await joinNewCohort(baseURL, email, [SLUG]);
  const started = await context.request.post(`/api/labs/${SLUG}/session`, { headers: { origin: baseURL } });
  if (!started.ok()) throw new Error(`lab session: HTTP ${started.status()} ${await started.text()}`);
  const { sessionId } = (await started.json()) as { sessionId: string };
  const [html, labProbe] = await Promise.all([typingPageHtml({ minify: !opts["cpu-profile"] }), bundle("bench/lib/lab-probe.ts")]);
  await context.route(`${baseURL}/__bench-floor*`, (route) => route.fulfill({ contentType: "text/html", body: html }));
  console.error(`app up and session ${sessionId} in ${Date.now() - t0} ms`);

  const samples: Record<Which, number[]> = { lab: [], floor: [], "floor-webgl": [] };
  const perRound = Math.ceil(opts.keys / opts.rounds);
  for (let round = 0; round < opts.rounds; round++) {
    const order = round % 2 ? [...pages].reverse() : pages;
    for (const which of order) {
      const page = await context.newPage();
      page.on("pageerror", (error) => console.error(`${which} page error: ${error.message}`));
      if (which === "lab") {
        await page.goto(`/labs/${SLUG}`);
        await probeLabPage(page, labProbe);
      } else {
        const renderer = which === "floor-webgl" ? "&renderer=webgl" : "";
        await page.goto(
          `/__bench-floor?floor=1${renderer}&machine=${MACHINE}&tokens=${encodeURIComponent(`/api/sessions/${sessionId}/terminal-tokens`)}`,
        );
        const used = await page.evaluate(() => (window as unknown as { __bench: { renderer: string } }).__bench.renderer);
        if (which === "floor-webgl" && used !== "webgl") throw new Error(`the WebGL renderer did not start: ${used}`);
      }
      await watchFrames(page);
      await intoCat(page);
      const result = results[which]!;
      result.lost += await typeKeys(page, perRound, samples[which]);
      const b = await bulk(page, round, which);
      result.bulkMs.push(b.ms);
      result.longestFrameMs.push(b.longestFrameMs);
      result.frames.push(b.frames);
      await page.keyboard.press("Control+D");
      await page.close();
      console.error(
        `round ${round + 1} ${which}: ${samples[which].length} keys so far, bulk ${b.ms} ms, ${b.longFrames} frames over 50 ms (${Math.round(b.longFramesMs)} ms in them), longest frame ${Math.round(b.longestFrameMs)} ms (script ${Math.round(b.parts.scriptMs)}, render ${Math.round(b.parts.renderMs)}, the rest waiting; top scripts: ${b.parts.top || "none"}); ` +
          `traced: ${b.frames.frames} frames, longest ${Math.round(b.frames.longestWallMs)} ms with ${Math.round(b.frames.longestWallCpuMs)} ms of main-thread CPU, most CPU in a frame ${Math.round(b.frames.longestCpuMs)} ms, ` +
          `${b.frames.overWall50} frames over 50 ms wall / ${b.frames.overCpu50} over 50 ms CPU; main thread ${Math.round(b.frames.mainCpuMs)} ms on a CPU, ${Math.round(b.frames.mainWaitMs)} ms waiting for one`,
      );
    }
  }
  for (const w of pages) {
    const result = results[w]!;
    result.keys = m.stats(samples[w]);
    if (result.keys.n === 0) throw new Error(`no keystroke was measured on the ${w} page`);
  }

  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
  const f = (x: number) => x.toFixed(1);
  const rows = pages.map((w) => {
    const r = results[w]!;
    const most = (pick: (s: FrameStats) => number) => Math.round(Math.max(...r.frames.map(pick)));
    const waitShare =
      r.frames.reduce((sum, s) => sum + s.mainWaitMs, 0) /
      Math.max(
        1,
        r.frames.reduce((sum, s) => sum + s.mainWaitMs + s.mainCpuMs, 0),
      );
    return `| ${w} | ${r.keys.n} | ${f(r.keys.p50)} | ${f(r.keys.p90)} | ${f(r.keys.p99)} | ${r.lost} | ${f(median(r.bulkMs) / 1000)} | ${Math.round(Math.max(...r.longestFrameMs))} | ${most((s) => s.longestCpuMs)} | ${Math.round(waitShare * 100)} % |`;
  });
  const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(2) : "n/a");
  console.log(
    `Browser typing (Chromium ${browser.version()}, GPU ${opts.gpu}), ${opts.rounds} interleaved round(s), ${opts["bulk-mib"]} MiB bulk, same session and machine (${MACHINE})`,
  );
  console.log(
    "| page | keys | p50 ms | p90 ms | p99 ms | lost | bulk s (median) | longest frame ms | most main-thread CPU in a frame ms | main thread waiting for a CPU |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|---|");
  for (const r of rows) console.log(r);
  console.log(
    `lab/floor: p50 ${ratio(results.lab.keys.p50, results.floor.keys.p50)}x (${f(results.lab.keys.p50 - results.floor.keys.p50)} ms), ` +
      `p99 ${ratio(results.lab.keys.p99, results.floor.keys.p99)}x (${f(results.lab.keys.p99 - results.floor.keys.p99)} ms), ` +
      `bulk ${ratio(median(results.lab.bulkMs), median(results.floor.bulkMs))}x`,
  );
  if (results["floor-webgl"]) {
    const g = results["floor-webgl"];
    console.log(
      `webgl/dom (floor page): p50 ${ratio(g.keys.p50, results.floor.keys.p50)}x, p99 ${ratio(g.keys.p99, results.floor.keys.p99)}x, ` +
        `bulk ${ratio(median(g.bulkMs), median(results.floor.bulkMs))}x, longest frame ${Math.round(Math.max(...g.longestFrameMs))} vs ${Math.round(Math.max(...results.floor.longestFrameMs))} ms`,
    );
  }
  if (opts.json) await fs.writeFile(opts.json, JSON.stringify({ opts, results }, null, 2));
} finally {
  await browser?.close();
  await app.stop();
}
