/**
 * The keystroke probe of the browser benches, in the page: the time at xterm's textarea keydown
 * (capture) and again at the first xterm render whose cursor row shows every key typed on it so
 * far. No requestAnimationFrame loop of its own (that would change what it measures: FACTS.md).
 * Used by bench/lib/typing-page.ts (its own xterm) and bench/lib/lab-probe.ts (the lab page's).
 */
export interface ProbedTerminal {
  textarea: HTMLTextAreaElement;
  onRender(listener: () => void): unknown;
  /** The cursor's row as text, right-trimmed. */
  cursorLine(): string;
}

export interface GlyphProbe {
  /** Forgets the cursor row's typed text (call after Enter). */
  newLine(): void;
  /** Resolves with keydown-to-glyph ms of the last key pressed, or null after `timeoutMs`. */
  waitGlyph(timeoutMs: number): Promise<number | null>;
}

export function glyphProbe(terminal: ProbedTerminal): GlyphProbe {
  let typed = "";
  let keydownAt = 0;
  let glyphAt = 0;
  let waiting: (() => void) | null = null;
  terminal.textarea.addEventListener(
    "keydown",
    (event) => {
      if (event.key.length !== 1) return;
      typed += event.key;
      keydownAt = performance.now();
      glyphAt = 0;
    },
    { capture: true },
  );
  terminal.onRender(() => {
    if (glyphAt || !keydownAt || !typed) return;
    if (!terminal.cursorLine().endsWith(typed)) return;
    glyphAt = performance.now();
    waiting?.();
  });
  return {
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
  };
}
