"use client";
/**
 * One machine's terminal: xterm.js on a TerminalConnection. Stays mounted while hidden (the tab
 * bar hides inactive terminals) so its shell and scrollback live on. Exposes its state as
 * `data-status` and its screen text through window.__labdeck (see terminal-registry.ts). Its
 * parts are the hooks beside it, in the order they build on each other: the xterm instance
 * (useXterm), the connection (useTerminalConnection), keys and clipboard (useTerminalInput), the
 * fit to its pane (useTerminalFit) and the page-level handle (useTerminalHandle).
 */
import "@xterm/xterm/css/xterm.css";
import { useTranslations } from "next-intl";
import { useRef, useState } from "react";
import type { ConnectionStatus } from "./connection";
import { sessionTokens } from "./session-tokens";
import { useTerminalConnection, type TokenSource } from "./useTerminalConnection";
import { useTerminalFit } from "./useTerminalFit";
import { useTerminalHandle } from "./useTerminalHandle";
import { useTerminalInput } from "./useTerminalInput";
import { useXterm } from "./useXterm";
import { terminalName } from "@/server/terminal/tab-names";

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
  tokenSource?: TokenSource;
  /** Keystrokes are not sent (the watch view); the gateway refuses read viewers' input anyway. */
  readOnly?: boolean;
}) {
  const { slug, machine, active, readOnly = false, number = 1 } = props;
  /** `node01`, `node01#2`: the key of its token and of window.__labdeck.terminals. */
  const name = terminalName(machine, number);
  const hostRef = useRef<HTMLDivElement>(null);
  const view = useXterm(hostRef, readOnly);
  const { attached, status, message, writerSize } = useTerminalConnection(view, {
    slug,
    machine,
    name,
    readOnly,
    tokenSource: props.tokenSource,
  });
  useTerminalInput(attached, machine);
  useTerminalFit(attached, readOnly, active);
  useTerminalHandle(attached, name);

  return (
    <div
      className="relative flex h-full w-full flex-col"
      data-testid={`terminal-${name}`}
      data-machine={machine}
      data-number={number}
      data-status={status}
      data-writer-size={writerSize}
    >
      {status !== "connected" && <StatusBanner slug={slug} machine={machine} status={status} message={message} />}
      <div ref={hostRef} className={`min-h-0 flex-1 bg-[#0b1020] p-1 ${readOnly ? "overflow-hidden" : ""}`} />
    </div>
  );
}

/**
 * Why the terminal is not connected, with what the learner can do about it (power on, reload).
 * It lies over the top of the terminal rather than above it: taking a line's height from the pane
 * while reconnecting resized the grid, and the PTY with it (the hello carries the grid's size), and
 * back once connected, and each resize made the shell redraw its prompt: bytes in the shell's
 * output, and in its recording, that the learner did not cause.
 */
function StatusBanner({
  slug,
  machine,
  status,
  message,
}: {
  slug: string;
  machine: string;
  status: ConnectionStatus;
  message: string | undefined;
}) {
  const t = useTranslations("terminal");
  return (
    <div
      role="status"
      className={`absolute inset-x-0 top-0 z-10 px-3 py-1 text-xs shadow ${status === "connecting" || status === "reconnecting" ? "bg-amber-100 text-amber-900" : "bg-red-100 text-red-900"}`}
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
  );
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
