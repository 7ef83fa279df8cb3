/**
 * Browser entry of bench/typing-under-load.ts (bundled by esbuild at bench time): one terminal as
 * the lab page shows it — xterm.js 6 with the options of components/terminal/Terminal.tsx and the
 * page's own TerminalConnection — plus a keydown-to-glyph probe. The bench presses keys with
 * Playwright; the probe (glyph-probe.ts) takes the time at the textarea's keydown and again at the
 * first xterm render whose cursor row shows every key typed on it so far.
 */
import { Terminal } from "@xterm/xterm";
import { Unicode11Addon } from "@xterm/addon-unicode11";
import { WebglAddon } from "@xterm/addon-webgl";
import { TerminalConnection } from "@/components/terminal/connection";
import { bufferText } from "@/components/terminal/terminal-registry";
import { glyphProbe } from "./glyph-probe";

declare global {
  interface Window {
    __bench: {
      status: string;
      /** Forgets the cursor row's typed text (call after Enter). */
      newLine(): void;
      /** Resolves with keydown-to-glyph ms of the last key pressed, or null after `timeoutMs`. */
      waitGlyph(timeoutMs: number): Promise<number | null>;
      text(lastRows?: number): string;
      bytes(): number;
      /** The renderer in use: "dom", or "webgl" when ?renderer=webgl got a WebGL2 context. */
      renderer: string;
    };
  }
}

const params = new URLSearchParams(location.search);
const token = params.get("token") ?? "";
// floor=1 marks the browser's floor for bench/browser-typing.ts: this page is that floor either way
// (xterm's default cursor, no blink, the same font and grid), so the page does not read it.
/** tokens=URL: fetch the write token from the app (same origin) instead of ?token (bench/browser-typing.ts). */
const tokensUrl = params.get("tokens");
const machine = params.get("machine") ?? "controlplane";
const host = document.getElementById("term")!;
const term = new Terminal({
  scrollback: 5_000,
  allowProposedApi: true,
  cursorBlink: false, // as the learner's page (Terminal.tsx): a blinking cursor made Chromium paint each echo a frame late
  fontFamily: '"DejaVu Sans Mono", "Noto Sans Mono CJK JP", monospace',
  fontSize: 14,
  lineHeight: 1.1,
  cols: 120,
  rows: 40,
  theme: { background: "#0b1020" },
});
term.loadAddon(new Unicode11Addon());
term.unicode.activeVersion = "11";
term.open(host);
/** renderer=webgl: xterm's WebGL renderer (bench/browser-typing.ts --webgl compares it with the DOM renderer). */
let renderer = "dom";
if (params.get("renderer") === "webgl") {
  try {
    const webgl = new WebglAddon();
    webgl.onContextLoss(() => {
      renderer = "dom (webgl context lost)";
      webgl.dispose();
    });
    term.loadAddon(webgl);
    renderer = "webgl";
  } catch (error) {
    renderer = `dom (webgl failed: ${(error as Error).message})`;
  }
}

const probe = glyphProbe({
  textarea: term.textarea!,
  onRender: (listener) => term.onRender(listener),
  cursorLine: () => {
    const buffer = term.buffer.active;
    return buffer.getLine(buffer.baseY + buffer.cursorY)?.translateToString(true) ?? "";
  },
});

const connection = new TerminalConnection(
  "bench",
  async () => {
    if (!tokensUrl) return token;
    const body = (await (await fetch(tokensUrl, { cache: "no-store" })).json()) as { machines: { name: string; token: string }[] };
    return body.machines.find((m) => m.name === machine)?.token ?? "";
  },
  { write: (data, written) => term.write(data, written), reset: () => term.reset(), size: () => ({ cols: term.cols, rows: term.rows }) },
  {
    onStatus: (status) => (window.__bench.status = status),
    messages: {
      lost: "lost",
      closeUnauthorized: "unauthorized",
      closeForbidden: "forbidden",
      closeNotFound: "not found",
      sessionOver: (reason) => `over: ${reason}`,
      revoked: (reason) => `revoked: ${reason}`,
      closed: (code, reason) => `closed ${code} ${reason}`,
      notice: (notice, machine) => `[${machine}: ${notice}]`,
      reason: (reason, machine) => `${machine}: ${reason}`,
    },
  },
);
term.onData((data) => connection.input(data));

window.__bench = {
  status: "connecting",
  ...probe,
  text: (lastRows) => bufferText(term, lastRows),
  bytes: () => connection.bytesReceived,
  get renderer() {
    return renderer;
  },
};
connection.start();
term.focus();
