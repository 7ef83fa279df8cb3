"use client";
/**
 * Keeps a terminal's grid fitted to its pane: a writer fits its terminal to the pane and resizes
 * the PTY; a read-only viewer renders at the writer's size (the gateway's `size` messages) and
 * scales that to fit its pane. On every resize of the pane, and when its tab becomes active.
 */
import { useEffect, useRef } from "react";
import type { AttachedTerminal } from "./useTerminalConnection";
import { scaleToFit } from "./useXterm";

export function useTerminalFit(attached: AttachedTerminal | null, readOnly: boolean, active: boolean): void {
  const fitRef = useRef<(() => void) | null>(null);

  useEffect(() => {
    if (!attached) return;
    const { view, connection } = attached;
    const { term, host } = view;
    fitRef.current = readOnly
      ? () => scaleToFit(host, term.element)
      : () => {
          view.fitToHost();
          connection.resize();
        };
    const observer = new ResizeObserver(() => fitRef.current?.());
    observer.observe(host);
    // Read-only: xterm lays out a new grid (the learner resized) when it renders; scale it then.
    const screenElement = term.element?.querySelector(".xterm-screen");
    if (readOnly && screenElement) observer.observe(screenElement);
    return () => observer.disconnect();
  }, [attached, readOnly]);

  useEffect(() => {
    if (active) fitRef.current?.();
  }, [active]);
}
