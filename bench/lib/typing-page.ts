/**
 * Browser entry of bench/typing-under-load.ts (bundled by esbuild at bench time): one terminal as
 * the lab page shows it — xterm.js 6 with the options of components/terminal/Terminal.tsx and the
 * page's own TerminalConnection — plus a keydown-to-glyph probe. The bench presses keys with
 * Playwright; the probe takes the time at the textarea's keydown and again at the first xterm
 * render whose cursor row shows every key typed on it so far (no rAF loop of its own: FACTS.md).
 */
import { Terminal } from "@xterm/xterm";
import { Unicode11Addon } from "@xterm/addon-unicode11";
import { TerminalConnection } from "@/components/terminal/connection";

declare global {
  interface Window {
    __bench: {
      status: string;
      /** Forgets the cursor row's typed text (call after Enter). */
      newLine(): void;
      /** Resolves with keydown-to-glyph ms of the last key pressed, or null after `timeoutMs`. */
      waitGlyph(timeoutMs: number): Promise<number | null>;
      text(): string;
      bytes(): number;
    };
  }
}

const params = new URLSearchParams(location.search);
const token = params.get("token") ?? "";
const host = document.getElementById("term")!;
const term = new Terminal({
  scrollback: 5_000,
  allowProposedApi: true,
  cursorBlink: true, // as the learner's page (Terminal.tsx, writers)
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

let typed = "";
let keydownAt = 0;
let glyphAt = 0;
let waiting: (() => void) | null = null;
term.textarea!.addEventListener(
  "keydown",
  (event) => {
    if (event.key.length !== 1) return;
    typed += event.key;
    keydownAt = performance.now();
    glyphAt = 0;
  },
  { capture: true },
);
term.onRender(() => {
  if (glyphAt || !keydownAt || !typed) return;
  const buffer = term.buffer.active;
  const row = buffer.getLine(buffer.baseY + buffer.cursorY)?.translateToString(true) ?? "";
  if (!row.endsWith(typed)) return;
  glyphAt = performance.now();
  waiting?.();
});

const connection = new TerminalConnection(
  "bench",
  async () => token,
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
    },
  },
);
term.onData((data) => connection.input(data));

window.__bench = {
  status: "connecting",
  newLine: () => {
    typed = "";
    keydownAt = 0;
  },
  waitGlyph: (timeoutMs) =>
    new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        waiting = null;
        resolve(glyphAt ? glyphAt - keydownAt : null);
      };
      const timer = setTimeout(done, timeoutMs);
      if (glyphAt) done();
      else waiting = done;
    }),
  text: () => {
    const buffer = term.buffer.active;
    const lines: string[] = [];
    for (let i = 0; i < buffer.length; i++) lines.push(buffer.getLine(i)?.translateToString(true) ?? "");
    return lines.join("\n");
  },
  bytes: () => connection.bytesReceived,
};
connection.start();
term.focus();
