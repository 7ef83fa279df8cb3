/**
 * Page-level handle on the mounted terminals: `window.__labdeck.terminals[machine]`. The lesson's
 * "run in machine" buttons type through it, and e2e tests read the screen text through it instead
 * of scraping the renderer's DOM.
 */
export interface TerminalHandle {
  /** The whole buffer (scrollback + screen) as text, one line per row. */
  text(): string;
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
