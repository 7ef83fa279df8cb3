"use client";
/**
 * One machine's terminal: xterm.js on a TerminalConnection. Stays mounted while hidden (the tab
 * bar hides inactive terminals) so its shell and scrollback live on. Exposes its state as
 * `data-status` and its screen text through window.__labdeck (see terminal-registry.ts).
 */
import "@xterm/xterm/css/xterm.css";
import { useTranslations } from "next-intl";
import { useEffect, useRef, useState } from "react";
import { TerminalConnection, type ConnectionStatus } from "./connection";
import { sessionErrorText, sessionTokens } from "./session-tokens";
import { attachClipboard } from "./clipboard";
import { bufferText, registerTerminal } from "./terminal-registry";
import { terminalName } from "@/server/terminal/tab-names";

/** Lines of scrollback xterm keeps in the browser. */
const SCROLLBACK_LINES = 5_000;

export function Terminal(props: {
  slug: string;
  machine: string;
  /** Which shell of the machine (server/terminal/tab-names.ts): 1, the default, is its first. */
  number?: number;
  active: boolean;
  /**
   * Where tokens come from; default: the learner's own session of `slug` (write tokens). The
   * instructor's watch view passes read-only tokens of the learner's session.
   */
  tokenSource?: (fresh: boolean) => Promise<Map<string, string>>;
  /** Keystrokes are not sent (the watch view); the gateway refuses read viewers' input anyway. */
  readOnly?: boolean;
}) {
  const { slug, machine, active, readOnly = false, number = 1 } = props;
  /** `node01`, `node01#2`: the key of its token and of window.__labdeck.terminals. */
  const name = terminalName(machine, number);
  const tokenSourceRef = useRef(props.tokenSource);
  tokenSourceRef.current = props.tokenSource;
  const hostRef = useRef<HTMLDivElement>(null);
  const fitRef = useRef<(() => void) | null>(null);
  const [status, setStatus] = useState<ConnectionStatus>("connecting");
  const [message, setMessage] = useState<string | undefined>();
  /** Read-only view: the learner's "COLSxROWS" it renders at, once the gateway has said. */
  const [writerSize, setWriterSize] = useState<string | undefined>();
  const t = useTranslations("terminal");
  // Read inside the connection's callbacks, so a language switch does not reconnect.
  const tRef = useRef(t);
  tRef.current = t;
  const tRevoked = useTranslations("revoked");
  const tRevokedRef = useRef(tRevoked);
  tRevokedRef.current = tRevoked;

  useEffect(() => {
    const host = hostRef.current;
    if (!host) return;
    let disposed = false;
    let cleanup = () => {};
    void (async () => {
      // xterm touches `window` at import time, so it loads in the browser only.
      const [{ Terminal: XTerm }, { FitAddon }, { Unicode11Addon }] = await Promise.all([
        import("@xterm/xterm"),
        import("@xterm/addon-fit"),
        import("@xterm/addon-unicode11"),
      ]);
      if (disposed) return;
      const term = new XTerm({
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
      const doFit = () => {
        if (host.offsetWidth > 0 && host.offsetHeight > 0) fit.fit();
      };
      // A writer fits its terminal to the pane and resizes the PTY; a read-only viewer renders at
      // the writer's size (the gateway's `size` messages) and scales that to fit its pane.
      if (!readOnly) doFit();
      fitRef.current = readOnly
        ? () => scaleToFit(host, term.element)
        : () => {
            doFit();
            connection.resize();
          };
      const connection = new TerminalConnection(
        machine,
        async (fresh) => {
          const source = tokenSourceRef.current;
          const tokens = source
            ? await source(fresh)
            : (
                await sessionTokens(slug, fresh).catch((error: unknown) => {
                  throw new Error(sessionErrorText(error, tRef.current));
                })
              ).tokens;
          const token = tokens.get(name);
          if (!token) throw new Error(tRef.current("noMachine", { machine: name }));
          return token;
        },
        {
          write: (data, written) => term.write(data, written),
          reset: () => term.reset(),
          size: () => ({ cols: Math.max(term.cols, 2), rows: Math.max(term.rows, 1) }),
          writerSize: ({ cols, rows }) => {
            if (!readOnly) return;
            term.resize(cols, rows);
            setWriterSize(`${cols}x${rows}`);
            requestAnimationFrame(() => scaleToFit(host, term.element)); // after xterm has laid out the new grid
          },
        },
        {
          onStatus: (s, m) => {
            setStatus(s);
            setMessage(m);
          },
          messages: {
            get lost() {
              return tRef.current("lost");
            },
            get closeUnauthorized() {
              return tRef.current("closeUnauthorized");
            },
            get closeForbidden() {
              return tRef.current("closeForbidden");
            },
            get closeNotFound() {
              return tRef.current("closeNotFound");
            },
            sessionOver: (reason) => tRef.current(`sessionOver.${reason}`),
            revoked: (reason) => tRevokedRef.current(reason),
            closed: (code, reason) => tRef.current("closed", { code, reason }),
          },
        },
      );
      // Input and exam-style copy/paste (keys typed right after a paste shortcut follow the pasted text).
      const detachClipboard = attachClipboard(term, {
        confirm: (lines) => window.confirm(tRef.current("pasteConfirm", { lines })),
        clipboard: navigator.clipboard,
        onError: (error) => console.warn(`${machine}: clipboard: ${(error as Error).message ?? String(error)}`),
        send: (data) => connection.input(data),
      });
      const observer = new ResizeObserver(() => fitRef.current?.());
      observer.observe(host);
      // Read-only: xterm lays out a new grid (the learner resized) when it renders; scale it then.
      const screenElement = term.element?.querySelector(".xterm-screen");
      if (readOnly && screenElement) observer.observe(screenElement);
      const unregister = registerTerminal(name, {
        text: (lastRows) => bufferText(term, lastRows),
        bytesReceived: () => connection.bytesReceived,
        size: () => ({ cols: term.cols, rows: term.rows }),
        focus: () => term.focus(),
        type: (text) => connection.input(text),
        cursorLine: () => {
          const buffer = term.buffer.active;
          return buffer.getLine(buffer.baseY + buffer.cursorY)?.translateToString(true) ?? "";
        },
        onRender: (listener) => {
          const subscription = term.onRender(listener);
          return () => subscription.dispose();
        },
      });
      connection.start();
      cleanup = () => {
        unregister();
        detachClipboard();
        observer.disconnect();
        connection.stop();
        term.dispose();
      };
    })();
    return () => {
      disposed = true;
      cleanup();
    };
  }, [slug, machine, name, readOnly]);

  useEffect(() => {
    if (active) fitRef.current?.();
  }, [active]);

  const showBanner = status !== "connected";
  return (
    <div
      className="relative flex h-full w-full flex-col"
      data-testid={`terminal-${name}`}
      data-machine={machine}
      data-number={number}
      data-status={status}
      data-writer-size={writerSize}
    >
      {showBanner && (
        <div
          role="status"
          className={`px-3 py-1 text-xs ${status === "connecting" || status === "reconnecting" ? "bg-amber-100 text-amber-900" : "bg-red-100 text-red-900"}`}
        >
          {machine}: {message ?? t(`status.${status}`)}
          {status === "stopped" && <StartMachineButton slug={slug} machine={machine} />}
          {status === "failed" && (
            // Reloading starts or resumes the session (a suspended one powers its machines on again).
            <button type="button" className="ml-2 rounded border border-red-300 px-2 underline" onClick={() => window.location.reload()}>
              {t("reload")}
            </button>
          )}
        </div>
      )}
      <div ref={hostRef} className={`min-h-0 flex-1 bg-[#0b1020] p-1 ${readOnly ? "overflow-hidden" : ""}`} />
    </div>
  );
}

/**
 * Scales a read-only terminal rendered at the learner's size down to fit its pane (never up: a
 * wide pane shows it at its natural size). A CSS transform keeps xterm's cell grid, so lines wrap
 * exactly where the learner's did.
 */
function scaleToFit(host: HTMLElement, element: HTMLElement | undefined): void {
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

/** Powers a stopped machine on again (POST …/machines/:name/start); the terminal re-attaches by itself. */
function StartMachineButton({ slug, machine }: { slug: string; machine: string }) {
  const t = useTranslations("terminal");
  const [state, setState] = useState<"idle" | "starting" | "error">("idle");
  const start = async () => {
    setState("starting");
    try {
      const { sessionId } = await sessionTokens(slug);
      const response = await fetch(`/api/sessions/${encodeURIComponent(sessionId)}/machines/${encodeURIComponent(machine)}/start`, {
        method: "POST",
      });
      setState(response.ok ? "idle" : "error");
    } catch {
      setState("error");
    }
  };
  return (
    <button
      type="button"
      className="ml-2 rounded border border-red-300 px-2 underline disabled:opacity-50"
      disabled={state === "starting"}
      onClick={() => void start()}
    >
      {state === "starting" ? t("starting") : state === "error" ? t("startError") : t("start")}
    </button>
  );
}
