"use client";
/** A terminal's keystrokes and exam-style copy/paste (clipboard.ts), sent on its connection. */
import { useTranslations } from "next-intl";
import { useEffect, useRef } from "react";
import { attachClipboard } from "./clipboard";
import type { AttachedTerminal } from "./useTerminalConnection";

export function useTerminalInput(attached: AttachedTerminal | null, machine: string): void {
  const t = useTranslations("terminal");
  // Read when a paste asks, so a language switch does not re-attach.
  const tRef = useRef(t);
  tRef.current = t;

  useEffect(() => {
    if (!attached) return;
    const { view, connection } = attached;
    // Keys typed right after a paste shortcut follow the pasted text.
    return attachClipboard(view.term, {
      confirm: (lines) => window.confirm(tRef.current("pasteConfirm", { lines })),
      clipboard: navigator.clipboard,
      onError: (error) => console.warn(`${machine}: clipboard: ${(error as Error).message ?? String(error)}`),
      send: (data) => connection.input(data),
    });
  }, [attached, machine]);
}
