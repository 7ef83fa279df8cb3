/**
 * The port between a terminal and its shell: a connector opens a shell with a PTY on one machine
 * (holder-connector.ts through the machine's holder, ssh-pty.ts straight over SSH) and hands its
 * output to the terminal (terminal.ts). Output offsets come from the holder's log.
 */
import type { TerminalNotice } from "./protocol";

/** A new shell's size until its writer says otherwise. */
export const DEFAULT_PTY_SIZE: PtySize = { cols: 80, rows: 24 };

export interface PtySize {
  cols: number;
  rows: number;
}

/** A browser's numbering of one input message: its writer id and sequence number (from 1). */
export interface InputSeq {
  writer: string;
  seq: number;
}

/** A live shell with a PTY. */
export interface PtyChannel {
  /** Keystrokes; with `input`, numbered by the browser (applied once where the shell outlives the channel). */
  write(data: string, input?: InputSeq): void;
  resize(size: PtySize): void;
  /** Stop reading output (backpressure reaches the remote program); resume() undoes it. */
  pause(): void;
  resume(): void;
  /** Stops using the shell; `endShell` (its lab session is over) also ends it where it outlives the channel. */
  close(endShell?: boolean): void;
}

export interface PtyHandlers {
  /** Output; `offset` is its place in the terminal's output (from the holder's log; absent: right after the last byte). */
  onData(chunk: Uint8Array, offset?: number): void;
  /** A line for the viewers that is not part of the shell's output (fallback, reboot). */
  onNotice?(notice: TerminalNotice): void;
  /** The shell's side applied `writer`'s input up to `seq`. */
  onInputAck?(writer: string, seq: number): void;
  /** The shell or the connection ended; `error` is set when it was not a normal exit. */
  onClose(error?: Error): void;
}

/** Opens shells on one machine. */
export interface PtyConnector {
  readonly machine: string;
  /**
   * @param size the writer's size; undefined while no writer gave one (only read-only viewers or a
   *   prewarm): a shell that runs keeps its size, a new one starts at DEFAULT_PTY_SIZE.
   * @param offset offset of the output the first viewer needs next (a resume), when this process has none yet.
   */
  open(size: PtySize | undefined, handlers: PtyHandlers, offset?: number): Promise<PtyChannel>;
  /** The terminal showed its viewers `notice` (its own or one from onNotice): a connector that records the output records it too. */
  noticed?(notice: TerminalNotice): void;
}
