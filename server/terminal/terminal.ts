/**
 * Core logic of one terminal (one shell on one machine), independent of message transport: it
 * imports neither `ws` nor `ssh2`. A PtyConnector (pty.ts) opens the shell; any number of
 * Viewers (server/terminal/gateway.ts adapts WebSockets) watch it. The terminal
 * outlives its viewers: output goes into a bounded ReplayBuffer addressed by byte offset, so a
 * viewer that comes back resumes where it left off, or gets a snapshot of the current screen
 * (a headless terminal, screen.ts) when its offset is no longer held. Output is read only while
 * some viewer takes it (updateFlow): the rest waits in the machine's holder.
 *
 * Offsets come from the holder's log (holder-connector.ts passes them with the output, mapped
 * past earlier log epochs), so a browser's offset means the same in every server process: a new process starts reading the
 * holder's log at the first viewer's offset and the browser resumes with no byte lost or repeated.
 * Lines the gateway itself shows (reconnected, shell ended, no holder) are notices outside the
 * byte stream; the connector's recording keeps them at their place in it. Browser input carries
 * the browser's writer id and sequence numbers, which the holder applies once (INPUT_AS),
 * whichever process relays them.
 */
import { metrics } from "../ops/metrics";
import type { MachineState, SessionOverReason, StatusReason, TerminalNotice } from "./protocol";
import { ReplayBuffer } from "./replay-buffer";
import { Screen } from "./screen";
import type { HostKeyMismatchError } from "../ssh/connect";
import { DEFAULT_PTY_SIZE, type InputSeq, type PtyChannel, type PtyConnector, type PtySize } from "./pty";

/** Replay buffer per terminal; about 2,000 lines of 120 columns with colour. */
export const REPLAY_BUFFER_BYTES = 256 * 1024;

/** Input typed before the shell is ready is queued up to this many bytes; beyond, it is dropped. */
export const PENDING_INPUT_BYTES = 64 * 1024;

/**
 * Notices a terminal keeps with their place in the output (the offset of the byte after them), so
 * a viewer replayed that output later (a watcher opening the watch view, a reloaded page) is
 * shown them there too; the oldest go first.
 */
export const SHOWN_NOTICES = 32;

/** Reconnect backoff after the machine fails to answer: first and longest wait, in ms. */
export const RECONNECT_MIN_MS = 500;
export const RECONNECT_MAX_MS = 10_000;
/** Longest a terminal waits for its machine's reset to end before it tries again on its own, ms. */
export const HOLD_MAX_MS = 5 * 60_000;

/** One watcher of a terminal; the transport adapter implements it. */
export interface Viewer {
  readonly mode: "write" | "read";
  /** The browser's writer id (its input seqs are numbered under it), if it numbers input. */
  readonly writer?: string;
  /** Sends output starting at `offset`. Returns false when the transport is backed up. */
  sendOutput(offset: number, chunk: Uint8Array): boolean;
  sendReset(offset: number): void;
  /** Clear the screen, paint `data` (a serialized screen); output continues from `offset`. */
  sendSnapshot(offset: number, data: string): void;
  /** A line to show that is not terminal output (not counted in offsets). */
  sendNotice(notice: TerminalNotice): void;
  /** The writer's input is applied up to `seq`. */
  sendAck(seq: number): void;
  sendStatus(state: MachineState, reason?: StatusReason): void;
  /** The PTY's size (read-only viewers only: they render at the writer's size). */
  sendSize(size: PtySize): void;
  /** The terminal is gone for good (its lab session is over): the viewer's transport closes. */
  end(reason: SessionOverReason): void;
}

interface ViewerState {
  /** Offset of the next byte this viewer needs. */
  offset: number;
  /** True while the transport is backed up; output is held back (it stays in the buffer). */
  blocked: boolean;
  /** True while a snapshot is being made for it; output waits. */
  snapshotting: boolean;
  /** Id of the last notice it was shown, or has output past (ShownNotice). */
  noticed: number;
}

/** A notice as shown: `offset` is that of the output byte that came after it. */
interface ShownNotice {
  id: number;
  offset: number;
  notice: TerminalNotice;
}

export interface TerminalOptions {
  replayBufferBytes?: number;
  /** Called when a state change is worth logging (never with terminal content). */
  onEvent?: (event: { machine: string; state: MachineState; reason?: StatusReason; message?: string }) => void;
  /**
   * Asked when the machine does not answer: whether it is powered off (then viewers see
   * "stopped" instead of "unreachable"). Absent: always "unreachable".
   */
  isPoweredOff?: () => Promise<boolean>;
}

/**
 * A terminal's shell lifecycle: connecting -> connected -> (unreachable|refused -> connecting)*,
 * until close(), which is final.
 */
export class Terminal {
  private readonly buffer: ReplayBuffer;
  private readonly viewers = new Map<Viewer, ViewerState>();
  private channel: PtyChannel | null = null;
  private state: MachineState = "connecting";
  private reason: StatusReason | undefined;
  private size: PtySize = DEFAULT_PTY_SIZE;
  /**
   * A writer gave the size: until then the shell keeps the size it has (a read-only viewer opening
   * the terminal first in a process, after a restart, must not resize it: bash would redraw its prompt).
   */
  private sized = false;
  private pendingInput: { data: string; input?: InputSeq }[] = [];
  private screen: Screen | null = null;
  /** Where the first channel should start reading the holder's log (the first viewer's offset). */
  private resumeOffset: number | undefined;
  private pendingBytes = 0;
  /** The channel is paused (no viewer, or every viewer backed up); a fresh terminal starts so. */
  private paused = true;
  private closed = false;
  private connecting = false;
  /** Its machine is being reset (hold): no connect until reconnectNow or HOLD_MAX_MS. */
  private held: NodeJS.Timeout | null = null;
  private attempt = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  /** Whether a shell has ever been connected (a later connect is a re-attach). */
  private everConnected = false;
  /** The last SHOWN_NOTICES notices, oldest first; ids count up. */
  private shown: ShownNotice[] = [];
  private lastNoticeId = 0;

  constructor(
    private readonly connector: PtyConnector,
    private readonly options: TerminalOptions = {},
  ) {
    this.buffer = new ReplayBuffer(options.replayBufferBytes ?? REPLAY_BUFFER_BYTES);
  }

  get machine(): string {
    return this.connector.machine;
  }

  get currentState(): MachineState {
    return this.state;
  }

  get viewerCount(): number {
    return this.viewers.size;
  }

  /** Offset right after the last output byte this process read. */
  get endOffset(): number {
    return this.buffer.endOffset;
  }

  /**
   * Adds a viewer that already has output up to `offset`. Returns the offset its output starts
   * at; when that differs from `offset` the viewer has been sent a reset first.
   */
  attach(viewer: Viewer, offset: number, size?: PtySize): number {
    if (this.closed) throw new Error("terminal is closed");
    if (!this.everConnected && !this.connecting && this.buffer.endOffset === 0 && offset > 0) {
      // A new process: read the holder's log from where this viewer stopped.
      this.buffer.rebase(offset);
      this.resumeOffset = offset;
    }
    // Notices before its offset came with output it has (or was shown already).
    const state: ViewerState = { offset, blocked: false, snapshotting: false, noticed: this.noticedBefore(offset) };
    this.viewers.set(viewer, state);
    viewer.sendStatus(this.state, this.reason);
    if (viewer.mode === "write" && size) this.resize(viewer, size);
    else if (viewer.mode === "read") viewer.sendSize(this.size);
    this.flush(viewer, state);
    this.updateFlow();
    if (!this.channel && !this.connecting && !this.retryTimer) void this.connect();
    return offset;
  }

  /**
   * Logs in to the machine's shell before anyone views it (its lab session just became ready): an SSH
   * login to a TCG guest takes seconds, and the page's first terminal then only attaches.
   */
  prewarm(): void {
    if (!this.closed && !this.channel && !this.connecting && !this.retryTimer) void this.connect();
  }

  detach(viewer: Viewer): void {
    this.viewers.delete(viewer);
    this.updateFlow();
  }

  /** Called by a viewer's transport when it can take output again. */
  drained(viewer: Viewer): void {
    const state = this.viewers.get(viewer);
    if (!state || !state.blocked) return;
    state.blocked = false;
    this.flush(viewer, state);
    this.updateFlow();
  }

  /**
   * Keystrokes from a viewer; read-only viewers are ignored (returns false). `seq` is the
   * browser's number for this input under its writer id (resends carry the same number).
   */
  input(viewer: Viewer, data: string, seq?: number): boolean {
    if (viewer.mode !== "write" || !this.viewers.has(viewer) || this.closed) return false;
    const input = seq !== undefined && viewer.writer ? { writer: viewer.writer, seq } : undefined;
    if (this.channel) {
      this.channel.write(data, input);
      return true;
    }
    const bytes = Buffer.byteLength(data);
    if (this.pendingBytes + bytes > PENDING_INPUT_BYTES) return false;
    this.pendingInput.push({ data, input });
    this.pendingBytes += bytes;
    return true;
  }

  resize(viewer: Viewer, size: PtySize): boolean {
    if (viewer.mode !== "write" || this.closed) return false;
    const changed = size.cols !== this.size.cols || size.rows !== this.size.rows;
    this.size = size;
    this.sized = true;
    this.screen?.resize(size);
    this.channel?.resize(size);
    if (changed) for (const v of this.viewers.keys()) if (v.mode === "read") v.sendSize(size);
    return true;
  }

  /**
   * The machine was put back to a saved state (a reset by snapshot): the connection from before
   * is dead without knowing it (the restored guest never had it), so drop it and attach again now
   * instead of waiting for the keepalive.
   */
  reconnectNow(): void {
    if (this.closed) return;
    if (this.held) clearTimeout(this.held);
    this.held = null;
    const channel = this.channel;
    this.channel = null;
    channel?.close();
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.attempt = 0;
    void this.connect();
  }

  /**
   * The machine is being reset: the shell from before is about to go, so the terminal lets go of
   * it and tries nothing until the reset ends (reconnectNow): it connects once, to the machine as
   * the reset left it, instead of once for every state the machine passes through.
   */
  hold(): void {
    if (this.closed) return;
    const channel = this.channel;
    this.channel = null;
    channel?.close();
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    if (this.held) clearTimeout(this.held);
    this.held = setTimeout(() => this.reconnectNow(), HOLD_MAX_MS);
    this.held.unref?.();
    this.setState("connecting", "reconnecting");
  }

  /**
   * Ends the terminal for good: closes the shell; with a reason (its lab session is over) every
   * viewer is told and its transport closed, else viewers are just forgotten (shutdown).
   */
  close(reason?: SessionOverReason): void {
    if (this.closed) return;
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    if (this.held) clearTimeout(this.held);
    this.held = null;
    // An ended lab session's shell is hung up; a suspended one's stays in the holder (the machine's
    // state is saved with it and the resume continues it).
    this.channel?.close(reason !== undefined && reason !== "suspended");
    this.channel = null;
    if (reason) for (const viewer of this.viewers.keys()) viewer.end(reason);
    this.viewers.clear();
    this.screen?.dispose();
    this.screen = null;
  }

  private async connect(): Promise<void> {
    if (this.closed || this.connecting || this.held) return;
    this.connecting = true;
    this.retryTimer = null;
    // A powered-off machine stays "stopped" through the retries (no flicker) until it answers.
    if (this.state !== "stopped") this.setState("connecting", this.everConnected ? "reconnecting" : undefined);
    try {
      const openedAt = this.sized ? this.size : undefined;
      const channel = await this.connector.open(
        openedAt,
        {
          onData: (chunk, offset) => this.output(chunk, offset),
          onNotice: (notice) => this.notice(notice),
          onInputAck: (writer, seq) => this.inputAcked(writer, seq),
          onClose: (error) => this.channelClosed(channel, error),
        },
        this.everConnected ? undefined : this.resumeOffset,
      );
      if (this.closed) {
        channel.close();
        return;
      }
      this.channel = channel;
      this.attempt = 0;
      if (this.everConnected) this.notice("reconnected");
      this.everConnected = true;
      // The writer resized while the shell was being opened (a page attaching to a prewarmed
      // terminal): the PTY gets the size it has now, before any input typed meanwhile.
      if (this.sized && (this.size.cols !== openedAt?.cols || this.size.rows !== openedAt.rows)) channel.resize(this.size);
      this.setState("connected");
      for (const { data, input } of this.pendingInput) channel.write(data, input);
      // Viewers that asked for more than the log turned out to hold get their snapshot now.
      for (const [viewer, state] of this.viewers) if (!state.blocked && state.offset > this.buffer.endOffset) this.flush(viewer, state);
      this.pendingInput = [];
      this.pendingBytes = 0;
      if (this.paused) channel.pause();
    } catch (error) {
      this.scheduleRetry(error as Error);
    } finally {
      this.connecting = false;
    }
  }

  private channelClosed(channel: PtyChannel, error?: Error): void {
    if (this.channel !== channel) return;
    this.channel = null;
    if (this.closed) return;
    if (error) {
      this.scheduleRetry(error);
    } else {
      // The shell exited (the learner typed `exit`): open a fresh one so the tab keeps working.
      this.notice("shellRestarted");
      this.scheduleRetry(undefined, RECONNECT_MIN_MS);
    }
  }

  private scheduleRetry(error: Error | undefined, delayMs?: number): void {
    if (this.closed) return;
    if (error) {
      const refused = (error as Partial<HostKeyMismatchError>).hostKeyMismatch === true;
      if (refused) {
        this.setState("refused", "hostKeyMismatch");
      } else {
        if (this.state !== "stopped") {
          this.setState("unreachable", "unreachable", error.message); // the log says why, not only that
        }
        void this.options.isPoweredOff?.().then(
          (off) => {
            if (this.closed || this.channel) return;
            if (off) this.setState("stopped", "poweredOff");
            else if (this.state === "stopped") this.setState("unreachable", "booting");
          },
          () => undefined,
        );
      }
    }
    const wait = delayMs ?? Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** this.attempt++);
    this.retryTimer = setTimeout(() => void this.connect(), wait);
    this.retryTimer.unref?.();
  }

  private setState(state: MachineState, reason?: StatusReason, message?: string): void {
    if (this.state === state && this.reason === reason) return;
    this.state = state;
    this.reason = reason;
    this.options.onEvent?.({ machine: this.machine, state, reason, ...(message === undefined ? {} : { message }) });
    for (const viewer of this.viewers.keys()) viewer.sendStatus(state, reason);
  }

  /** Output at `offset` (absent: right after the last byte). */
  private output(chunk: Uint8Array, offset = this.buffer.endOffset): void {
    if (chunk.byteLength === 0) return;
    // The log jumped (a new holder instance, the direct PTY, a reader that fell behind): what
    // is held starts here; viewers elsewhere get a snapshot.
    if (offset !== this.buffer.endOffset) this.buffer.rebase(offset);
    this.buffer.append(chunk);
    this.screen ??= new Screen(this.size, offset);
    this.screen.write(offset, chunk);
    for (const [viewer, state] of this.viewers) {
      if (state.blocked || state.snapshotting) continue;
      if (state.offset !== offset) {
        if (this.buffer.since(state.offset) === null) this.flush(viewer, state);
        continue;
      }
      state.offset = offset + chunk.byteLength;
      if (!viewer.sendOutput(offset, chunk)) state.blocked = true;
    }
    this.updateFlow();
  }

  private notice(notice: TerminalNotice): void {
    const shown = { id: ++this.lastNoticeId, offset: this.buffer.endOffset, notice };
    this.shown.push(shown);
    if (this.shown.length > SHOWN_NOTICES) this.shown.shift();
    for (const [viewer, state] of this.viewers) {
      viewer.sendNotice(notice);
      state.noticed = shown.id;
    }
    // A replay shows the line too, where the recording has it.
    this.connector.noticed?.(notice);
  }

  /** Shows a viewer the notices it has not been shown that came before the output at `offset`. */
  private showNotices(viewer: Viewer, state: ViewerState, offset: number): void {
    for (const shown of this.shown) {
      if (shown.id <= state.noticed || shown.offset > offset) continue;
      viewer.sendNotice(shown.notice);
      state.noticed = shown.id;
    }
  }

  /** The id of the last notice shown before output at `offset` (0: none). */
  private noticedBefore(offset: number): number {
    let id = 0;
    for (const shown of this.shown) if (shown.offset < offset) id = shown.id;
    return id;
  }

  private inputAcked(writer: string, seq: number): void {
    for (const viewer of this.viewers.keys()) if (viewer.writer === writer) viewer.sendAck(seq);
  }

  /**
   * Sends a viewer everything it is missing. When that has left the buffer (or lies beyond its
   * end), the viewer gets the current screen instead, and output from the snapshot's offset.
   */
  private flush(viewer: Viewer, state: ViewerState): void {
    if (state.snapshotting) return;
    const chunks = this.buffer.since(state.offset);
    if (chunks === null) {
      if (state.offset > this.buffer.endOffset && !this.everConnected) return; // a resume: the first read starts there
      return this.snapshot(viewer, state);
    }
    for (const chunk of chunks) {
      const offset = state.offset;
      this.showNotices(viewer, state, offset);
      state.offset += chunk.byteLength;
      if (!viewer.sendOutput(offset, chunk)) {
        state.blocked = true;
        return;
      }
    }
    this.showNotices(viewer, state, state.offset);
  }

  private snapshot(viewer: Viewer, state: ViewerState): void {
    if (!this.screen) {
      // Nothing seen yet (no output since this process attached): start from what is held.
      state.offset = this.buffer.startOffset;
      viewer.sendReset(state.offset);
      return this.flush(viewer, state);
    }
    state.snapshotting = true;
    metrics().terminalSnapshots.inc();
    if (this.screen.stale) this.screen.rebuild(this.buffer.startOffset, this.buffer.since(this.buffer.startOffset) ?? []);
    this.screen.snapshot().then(
      (snap) => {
        state.snapshotting = false;
        if (this.viewers.get(viewer) !== state) return;
        state.offset = snap.offset;
        state.noticed = Math.max(state.noticed, this.noticedBefore(snap.offset)); // the screen shows no notice
        viewer.sendSnapshot(snap.offset, snap.data);
        if (!state.blocked) this.flush(viewer, state);
      },
      () => {
        state.snapshotting = false;
      },
    );
  }

  /**
   * Reads the shell's output only while some viewer takes it: paused while every viewer is backed
   * up (its socket, or the window its page asked for) and while there is no viewer at all. The
   * holder keeps the log on the machine (the remote program runs on; the direct PTY's is slowed
   * by backpressure instead), so an unwatched or slow terminal costs this process nothing; the
   * next viewer resumes from its offset, or gets a snapshot when the holder no longer has it.
   */
  private updateFlow(): void {
    let allBlocked = true;
    for (const state of this.viewers.values()) if (!state.blocked) allBlocked = false;
    const shouldPause = allBlocked;
    if (shouldPause === this.paused) return;
    this.paused = shouldPause;
    if (shouldPause) metrics().backpressurePauses.inc();
    if (shouldPause) this.channel?.pause();
    else this.channel?.resume();
  }
}
