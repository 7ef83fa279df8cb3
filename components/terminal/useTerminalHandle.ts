"use client";
/** Registers a mounted terminal in window.__labdeck.terminals (terminal-registry.ts) while it is attached. */
import { useEffect } from "react";
import { bufferText, registerTerminal } from "./terminal-registry";
import type { AttachedTerminal } from "./useTerminalConnection";

/** `name`: the terminal's name (`node01`, `node01#2`), the registry's key. */
export function useTerminalHandle(attached: AttachedTerminal | null, name: string): void {
  useEffect(() => {
    if (!attached) return;
    const { view, connection } = attached;
    const { term } = view;
    return registerTerminal(name, {
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
  }, [attached, name]);
}
