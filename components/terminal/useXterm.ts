"use client";
/**
 * The xterm.js instance of one terminal, opened in its host element. xterm touches `window` at
 * import time, so it is loaded in the browser only, after the first render.
 */
import type { Terminal as XTerm } from "@xterm/xterm";
import { useEffect, useState, type RefObject } from "react";

/** Lines of scrollback xterm keeps in the browser. */
const SCROLLBACK_LINES = 5_000;

/** An opened xterm and the element it lives in. */
export interface XtermView {
  term: XTerm;
  host: HTMLElement;
  /** Fits the grid to the host, when the host has a size (a hidden tab's has none). */
  fitToHost(): void;
}

/** Opens an xterm in `hostRef`'s element; null until it is open. A writer's grid is fitted to the host at once. */
export function useXterm(hostRef: RefObject<HTMLElement | null>, readOnly: boolean): XtermView | null {
  const [view, setView] = useState<XtermView | null>(null);
  useEffect(() => {
    const host = hostRef.current;
    if (!host) return;
    let disposed = false;
    let opened: XtermView | undefined;
    void loadXterm().then((xterm) => {
      if (disposed) return;
      opened = openXterm(xterm, host, readOnly);
      setView(opened);
    });
    return () => {
      disposed = true;
      opened?.term.dispose();
      setView(null);
    };
  }, [hostRef, readOnly]);
  return view;
}

async function loadXterm() {
  const [{ Terminal }, { FitAddon }, { Unicode11Addon }] = await Promise.all([
    import("@xterm/xterm"),
    import("@xterm/addon-fit"),
    import("@xterm/addon-unicode11"),
  ]);
  return { Terminal, FitAddon, Unicode11Addon };
}

function openXterm(
  { Terminal, FitAddon, Unicode11Addon }: Awaited<ReturnType<typeof loadXterm>>,
  host: HTMLElement,
  readOnly: boolean,
): XtermView {
  const term = new Terminal({
    scrollback: SCROLLBACK_LINES,
    allowProposedApi: true, // for the unicode11 addon: East Asian wide characters take two cells
    // No blink: xterm.js keeps an animation running for it, and Chromium then paints every
    // echoed key one frame later (bench/browser-typing.ts: 28.3 ms keydown-to-glyph p50 with
    // the blink, 7.1 ms on the floor page). A focused terminal still shows a solid block
    // cursor, an unfocused one an outline.
    cursorBlink: false,
    disableStdin: readOnly,
    fontFamily: '"DejaVu Sans Mono", "Noto Sans Mono CJK JP", monospace',
    fontSize: 14,
    // xterm's DOM renderer clips each row at the cell height, and DejaVu Sans Mono draws "_"
    // below it: at 1.0, ip_forward showed as "ip forward" (xtermjs/xterm.js#4067).
    lineHeight: 1.1,
    theme: { background: "#0b1020" },
  });
  term.loadAddon(new Unicode11Addon());
  term.unicode.activeVersion = "11";
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(host);
  const fitToHost = () => {
    if (host.offsetWidth > 0 && host.offsetHeight > 0) fit.fit();
  };
  // A writer fits its terminal to the pane (and so starts at the pane's size); a read-only viewer
  // renders at the writer's size (useTerminalFit).
  if (!readOnly) fitToHost();
  return { term, host, fitToHost };
}

/**
 * Scales a read-only terminal rendered at the learner's size down to fit its pane (never up: a
 * wide pane shows it at its natural size). A CSS transform keeps xterm's cell grid, so lines wrap
 * exactly where the learner's did.
 */
export function scaleToFit(host: HTMLElement, element: HTMLElement | undefined): void {
  const screen = element?.querySelector<HTMLElement>(".xterm-screen");
  if (!element || !screen || host.clientWidth === 0 || host.clientHeight === 0 || screen.offsetWidth === 0) return;
  const style = getComputedStyle(host);
  const width = host.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  const height = host.clientHeight - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom);
  const scale = Math.min(1, width / screen.offsetWidth, height / screen.offsetHeight);
  element.style.width = "fit-content"; // the grid's width, so the scrollbar stays beside it
  element.style.transformOrigin = "top left";
  element.style.transform = `scale(${scale})`;
  element.dataset.scale = scale.toFixed(3);
}
