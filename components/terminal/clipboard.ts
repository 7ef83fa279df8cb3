/**
 * Copy and paste in a lab terminal as in the CKA exam's terminal:
 * Ctrl+Shift+C copies the selection, Ctrl+Shift+V and a right click paste; Ctrl+V and the
 * browser's own paste keep working. Every paste goes through xterm's `paste` (bracketed paste when
 * the shell asked for it, line ends as a terminal sends them), and a paste of many lines asks
 * first, so a stray clipboard does not type a page of commands into a root shell. Copy is xterm's
 * selection text, which joins soft-wrapped rows into one line.
 *
 * Browser-only (useTerminalInput.ts attaches it to an opened xterm); the decision is a pure function.
 */
import type { Terminal } from "@xterm/xterm";

/** A paste of more lines than this asks for confirmation first. */
export const PASTE_CONFIRM_LINES = 5;
/** … as does one longer than this, in characters (one very long line of commands). */
export const PASTE_CONFIRM_CHARS = 4_000;

/** Lines a paste would type (a trailing line end does not start another). */
export function pasteLines(text: string): number {
  const normalized = text.replace(/\r\n?/g, "\n").replace(/\n$/, "");
  return normalized === "" ? 0 : normalized.split("\n").length;
}

/** Whether pasting `text` should ask first. */
export function needsPasteConfirmation(text: string): boolean {
  return pasteLines(text) > PASTE_CONFIRM_LINES || text.length > PASTE_CONFIRM_CHARS;
}

/**
 * Keystrokes typed while a paste's clipboard read is still pending wait for it and follow the
 * pasted text: a learner's Enter right after Ctrl+Shift+V runs the pasted command, it is not
 * sent first (the read is asynchronous; measured in the e2e: an Enter pressed at once got ahead).
 */
export class PasteOrder {
  private held = false;
  private readonly queued: string[] = [];
  constructor(private readonly send: (data: string) => void) {}

  /** Terminal input (xterm's onData). */
  input(data: string): void {
    if (this.held) this.queued.push(data);
    else this.send(data);
  }

  /** Holds input until `read` settles; `then` runs first (the paste itself). */
  hold<T>(read: Promise<T>, then: (value: T) => void, failed: (error: unknown) => void): void {
    this.held = true;
    const release = () => {
      this.held = false;
      for (const data of this.queued.splice(0)) this.send(data);
    };
    read.then(
      (value) => {
        this.held = false; // the paste's own input goes straight out, before what was typed after it
        then(value);
        release();
      },
      (error: unknown) => {
        release();
        failed(error);
      },
    );
  }
}

export interface ClipboardDeps {
  /** Asks whether to paste `lines` lines (window.confirm in the page). */
  confirm(lines: number): boolean;
  clipboard: Pick<Clipboard, "readText" | "writeText">;
  /** A clipboard read or write failed (permission refused, no focus). */
  onError?(error: unknown): void;
  /** Where the terminal's input goes (the connection); typed input waits behind a pending paste. */
  send(data: string): void;
}

/** Wires exam-style copy and paste and the terminal's input into `term` (opened, with its textarea); returns the removal. */
export function attachClipboard(term: Terminal, deps: ClipboardDeps): () => void {
  const order = new PasteOrder((data) => deps.send(data));
  const onData = term.onData((data) => order.input(data));
  const paste = (text: string) => {
    if (!text) return;
    if (needsPasteConfirmation(text) && !deps.confirm(pasteLines(text))) return;
    term.paste(text);
  };
  const pasteFromClipboard = () => order.hold(deps.clipboard.readText(), paste, (error: unknown) => deps.onError?.(error));

  term.attachCustomKeyEventHandler((event) => {
    if (!event.ctrlKey || !event.shiftKey || event.altKey || event.metaKey) return true;
    if (event.code !== "KeyC" && event.code !== "KeyV") return true;
    // Both directions of the shortcut are ours: xterm must not send ^C / ^V, the browser must not
    // run its own (Ctrl+Shift+C opens the inspector, Ctrl+Shift+V would paste a second time).
    if (event.type === "keydown") {
      event.preventDefault();
      if (event.code === "KeyC") {
        const selection = term.getSelection();
        if (selection) void deps.clipboard.writeText(selection).catch((error: unknown) => deps.onError?.(error));
      } else pasteFromClipboard();
    }
    return false;
  });

  // The browser's own paste (Ctrl+V, the menu, a middle click): long ones ask first.
  const textarea = term.textarea;
  const onPaste = (event: ClipboardEvent) => {
    const text = event.clipboardData?.getData("text/plain") ?? "";
    if (!needsPasteConfirmation(text)) return; // xterm pastes it
    event.preventDefault();
    event.stopImmediatePropagation();
    paste(text);
  };
  textarea?.addEventListener("paste", onPaste, { capture: true });

  // A right click pastes, as in PuTTY and the exam's terminal.
  const element = term.element;
  const onContextMenu = (event: MouseEvent) => {
    event.preventDefault();
    term.focus();
    pasteFromClipboard();
  };
  element?.addEventListener("contextmenu", onContextMenu);

  return () => {
    onData.dispose();
    term.attachCustomKeyEventHandler(() => true);
    textarea?.removeEventListener("paste", onPaste, { capture: true });
    element?.removeEventListener("contextmenu", onContextMenu);
  };
}
