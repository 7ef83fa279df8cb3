/**
 * Browser entry of bench/browser-typing.ts for the real lab page (bundled at bench time, added to
 * the page once its terminal is mounted): window.__bench over the page's own terminal handle
 * (components/terminal/terminal-registry.ts), with the same keystroke probe as the floor page.
 */
import { glyphProbe } from "./glyph-probe";

const machine = document.currentScript?.dataset.machine ?? "controlplane";
const handle = window.__labdeck!.terminals[machine]!;
const root = document.querySelector(`[data-testid="terminal-${machine}"]`)!;
const textarea = root.querySelector("textarea")!;
const probe = glyphProbe({ textarea, onRender: (listener) => handle.onRender(listener), cursorLine: () => handle.cursorLine() });

(window as unknown as { __bench: unknown }).__bench = {
  get status() {
    return root.getAttribute("data-status") ?? "loading";
  },
  ...probe,
  text: (lastRows?: number) => handle.text(lastRows),
  bytes: () => handle.bytesReceived(),
};
textarea.focus();
