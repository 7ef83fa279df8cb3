/**
 * Page-level handle on the mounted terminals: `window.__labdeck.terminals[machine]`. The lesson's
 * "run in machine" buttons type through it, and e2e tests read the screen text through it instead
 * of scraping the renderer's DOM.
 */
import type { Terminal } from "@xterm/xterm";

export interface TerminalHandle {
  /**
   * The buffer (scrollback + screen) as text, one line per row: the whole of it, or only its last
   * `lastRows` rows (a poll during a flood: the whole of 5,000 rows takes 30-70 ms of the page).
   */
  text(lastRows?: number): string;
  bytesReceived(): number;
  /** The terminal's grid (for a read-only view: the learner's size it renders at). */
  size(): { cols: number; rows: number };
  focus(): void;
  /** Sends text to the shell as if typed (the lesson's "run in machine" buttons). */
  type(text: string): void;
  /** The row the cursor is on, as text (right-trimmed). For the browser bench's keystroke probe. */
  cursorLine(): string;
  /** Calls `listener` after each xterm render (bench/browser-typing.ts times glyphs with it); returns its removal. */
  onRender(listener: () => void): () => void;
}

declare global {
  interface Window {
    __labdeck?: { terminals: Record<string, TerminalHandle> };
  }
}

export function registerTerminal(machine: string, handle: TerminalHandle): () => void {
  const root = (window.__labdeck ??= { terminals: {} });
  root.terminals[machine] = handle;
  return () => {
    if (root.terminals[machine] === handle) delete root.terminals[machine];
  };
}

/** `TerminalHandle.text` over an xterm terminal: its buffer's rows (the last `lastRows`, or all), right-trimmed, one per line. */
export function bufferText(term: Terminal, lastRows?: number): string {
  const buffer = term.buffer.active;
  const lines: string[] = [];
  for (let i = lastRows === undefined ? 0 : Math.max(0, buffer.length - lastRows); i < buffer.length; i++)
    lines.push(buffer.getLine(i)?.translateToString(true) ?? "");
  return lines.join("\n");
}
