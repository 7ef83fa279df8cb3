/**
 * Browser end of one terminal's WebSocket: hello, offset-checked output, numbered input kept
 * until acknowledged (resent after a reconnect with the same numbers, applied once by the
 * machine's terminal holder), screen snapshots, resize, ping, and reconnect with backoff (at once
 * when the server says it is restarting, CloseCode.restarting). Independent of React and of xterm:
 * it talks to a TerminalScreen, so the resume logic reads in one place.
 */
import {
  CloseCode,
  decodeOutput,
  FATAL_CLOSE_CODES,
  parseServerMessage,
  RevokedReason,
  SessionOverReason,
  TERMINAL_WS_PATH,
  type ClientMessage,
  type MachineState,
  type StatusReason,
  type TerminalNotice,
} from "@/server/terminal/protocol";

/** What the page shows, and exposes as data-status for tests and assistive tech. */
export type ConnectionStatus = "connecting" | "connected" | "reconnecting" | "unreachable" | "refused" | "stopped" | "failed";

export interface TerminalScreen {
  /** `written` runs once the screen has taken the bytes in (xterm: parsed them). */
  write(data: Uint8Array, written?: () => void): void;
  /** Clears the screen and scrollback (the gateway no longer has what we missed). */
  reset(): void;
  size(): { cols: number; rows: number };
  /** The writer's terminal size, sent to read-only viewers (the watch view renders at it). */
  writerSize?(size: { cols: number; rows: number }): void;
}

/**
 * Reconnect backoff: first wait and cap, in ms; each wait gets up to 30 % jitter. The cap is what
 * a page waits, at worst, after a killed or restarted server listens again (plus up to 30 %): at
 * 1 s it is a small part of the 5 s in which a page should type again after a restart listens
 * (the rest is the login into the machine), for one refused connect or proxy 502 per terminal
 * each second while the server is away.
 */
export const RECONNECT_MIN_MS = 300;
export const RECONNECT_MAX_MS = 1_000;

/** The wait before reconnect attempt `attempt` (0 for the first after a drop), in ms. */
export function reconnectDelayMs(attempt: number, random: () => number = Math.random): number {
  return Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** attempt) * (1 + random() * 0.3);
}
/** Application ping, which also keeps idle proxies from closing the socket. */
const PING_INTERVAL_MS = 20_000;
/** Unacknowledged keystrokes (typed while disconnected, or in flight) are kept up to this many characters. */
const QUEUED_INPUT_CHARS = 16 * 1024;

/**
 * Flow control (hello `window`): the gateway keeps at most this many output bytes on the way
 * beyond what xterm has written, so a page that cannot keep up (a flood, a slow machine) holds
 * back its own terminal, not the server.
 */
export const OUTPUT_WINDOW_BYTES = 1024 * 1024;
/**
 * Output goes to xterm in pieces of at most this many bytes. xterm parses one write without a
 * break and looks at the clock (its 12 ms budget per frame) only between writes, so a 64–256 KiB
 * frame (a flood, the holder's batched reads) held the tab for one long frame.
 */
export const WRITE_PIECE_BYTES = 16 * 1024;
/** The page reports what xterm has written (`consumed`) once this many bytes have been written since the last report. */
export const CONSUMED_EVERY_BYTES = 64 * 1024;

/** A random writer id for this page's input sequence (the protocol's writer alphabet). */
function newWriterId(): string {
  const bytes = new Uint8Array(12);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export interface ConnectionEvents {
  onStatus(status: ConnectionStatus, message?: string): void;
  /** The page's wording (in its language) of what the connection reports itself. */
  messages: ConnectionMessages;
}

export interface ConnectionMessages {
  lost: string;
  closeUnauthorized: string;
  closeForbidden: string;
  closeNotFound: string;
  /** Why the server ended or suspended the session (close code 4410). */
  sessionOver(reason: SessionOverReason): string;
  /** Why an open socket lost its access (4401/4403 with a RevokedReason). */
  revoked(reason: RevokedReason): string;
  closed(code: number, reason: string): string;
  /** A line the terminal shows that is not the shell's output (no holder, rebooted, reconnected, shell restarted). */
  notice(notice: TerminalNotice, machine: string): string;
  /** Why the machine's terminal is not connected. */
  reason(reason: StatusReason, machine: string): string;
}

export class TerminalConnection {
  private ws: WebSocket | null = null;
  /** Bytes of output written to the screen so far: the resume point. */
  private offset = 0;
  /** Offset up to which xterm has taken the output in, and the last one reported to the gateway. */
  private writtenTo = 0;
  private reportedTo = 0;
  private ready = false;
  /** Input not yet acknowledged, oldest first: sent when typed (if connected) and again after every reconnect. */
  private unacked: { seq: number; data: string }[] = [];
  private unackedChars = 0;
  private nextSeq = 1;
  private readonly writer = newWriterId();
  private attempt = 0;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private pingTimer: ReturnType<typeof setInterval> | null = null;
  private stopped = false;
  private triedFreshToken = false;
  /** The server said it is restarting (CloseCode.restarting) since the last ready: reconnected once at once. */
  private restartSeen = false;
  private machineState: MachineState = "connecting";
  private lastSize = { cols: 0, rows: 0 };

  constructor(
    private readonly machine: string,
    private readonly token: (fresh: boolean) => Promise<string>,
    private readonly screen: TerminalScreen,
    private readonly events: ConnectionEvents,
  ) {}

  get bytesReceived(): number {
    return this.offset;
  }

  start(): void {
    void this.connect(false);
  }

  stop(): void {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.ws?.close(1000, "page closed");
  }

  input(data: string): void {
    if (this.unackedChars + data.length > QUEUED_INPUT_CHARS) return;
    const input = { seq: this.nextSeq++, data };
    this.unacked.push(input);
    this.unackedChars += data.length;
    if (this.ready) this.send({ type: "input", ...input });
  }

  resize(): void {
    const size = this.screen.size();
    if (size.cols === this.lastSize.cols && size.rows === this.lastSize.rows) return;
    if (!this.ready) return;
    this.lastSize = size;
    this.send({ type: "resize", ...size });
  }

  private async connect(freshToken: boolean): Promise<void> {
    if (this.stopped) return;
    let token: string;
    try {
      token = await this.token(freshToken);
    } catch (error) {
      this.events.onStatus("failed", (error as Error).message);
      return;
    }
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(`${scheme}//${location.host}${TERMINAL_WS_PATH}`);
    ws.binaryType = "arraybuffer";
    this.ws = ws;
    ws.onopen = () => {
      const size = this.screen.size();
      this.lastSize = size;
      this.send({ type: "hello", token, offset: this.offset, writer: this.writer, window: OUTPUT_WINDOW_BYTES, ...size });
    };
    ws.onmessage = (event) => {
      if (typeof event.data === "string") this.control(event.data);
      else this.output(new Uint8Array(event.data as ArrayBuffer));
    };
    ws.onclose = (event) => this.closed(ws, event.code, event.reason);
  }

  private control(text: string): void {
    const message = parseServerMessage(text);
    if (!message) return this.ws?.close(CloseCode.badMessage, "malformed server message");
    switch (message.type) {
      case "ready":
        this.ready = true;
        this.attempt = 0;
        this.triedFreshToken = false;
        this.restartSeen = false;
        // Everything not acknowledged: what reached the machine before the outage is only acknowledged.
        for (const input of this.unacked) this.send({ type: "input", ...input });
        if (this.pingTimer) clearInterval(this.pingTimer);
        this.pingTimer = setInterval(() => this.send({ type: "ping", t: Date.now() }), PING_INTERVAL_MS);
        this.resize();
        this.report();
        return;
      case "reset":
        this.screen.reset();
        this.offset = this.writtenTo = this.reportedTo = message.offset;
        return;
      case "snapshot":
        this.screen.reset();
        this.screen.write(new TextEncoder().encode(message.data));
        this.offset = this.writtenTo = this.reportedTo = message.offset;
        return;
      case "notice": {
        // In the page's language; a server from before keys sends its own words only.
        const text = message.notice ? `\r\n${this.events.messages.notice(message.notice, this.machine)}\r\n` : message.text;
        this.screen.write(new TextEncoder().encode(text));
        return;
      }
      case "ack":
        while (this.unacked.length && this.unacked[0]!.seq <= message.seq) this.unackedChars -= this.unacked.shift()!.data.length;
        return;
      case "status":
        this.machineState = message.state;
        this.report(message.reason ? this.events.messages.reason(message.reason, this.machine) : message.message);
        return;
      case "pong":
        return;
      case "size":
        this.screen.writerSize?.({ cols: message.cols, rows: message.rows });
        return;
    }
  }

  private output(frame: Uint8Array): void {
    const decoded = decodeOutput(frame);
    if (!decoded) return;
    const end = decoded.offset + decoded.data.byteLength;
    if (end <= this.offset) return; // already have it
    if (decoded.offset > this.offset) {
      // A gap would corrupt the screen; reconnect and let the gateway replay from our offset.
      this.ws?.close(4000, "output gap");
      return;
    }
    const data = decoded.data.subarray(this.offset - decoded.offset);
    for (let at = 0; at < data.byteLength; at += WRITE_PIECE_BYTES) {
      const last = at + WRITE_PIECE_BYTES >= data.byteLength;
      // A UTF-8 sequence cut between two pieces is fine: xterm's decoder keeps its state across writes.
      this.screen.write(data.subarray(at, at + WRITE_PIECE_BYTES), last ? () => this.written(end) : undefined);
    }
    this.offset = end;
  }

  /** xterm has taken output in up to `end`: report it now and then, so the window moves on. */
  private written(end: number): void {
    if (end <= this.writtenTo) return;
    this.writtenTo = end;
    if (!this.ready || this.writtenTo - this.reportedTo < CONSUMED_EVERY_BYTES) return;
    this.reportedTo = this.writtenTo;
    this.send({ type: "consumed", offset: this.writtenTo });
  }

  private closed(ws: WebSocket, code: number, reason: string): void {
    if (this.ws !== ws) return;
    this.ws = null;
    this.ready = false;
    if (this.pingTimer) clearInterval(this.pingTimer);
    if (this.stopped) return;
    // Signed out while connected: fresh tokens cannot help (the token route answers 401).
    const revoked = RevokedReason.safeParse(reason).success;
    if (code === CloseCode.unauthorized && !this.triedFreshToken && !revoked) {
      // The token may have expired: ask for fresh tokens once before giving up.
      this.triedFreshToken = true;
      this.events.onStatus("reconnecting");
      void this.connect(true);
      return;
    }
    if (code === CloseCode.restarting && !this.restartSeen) {
      // A graceful restart: reconnect now (a proxy sends us to another process), quietly; if that
      // fails too, the backoff below takes over from its first step.
      this.restartSeen = true;
      this.attempt = 0;
      this.events.onStatus("reconnecting");
      void this.connect(false);
      return;
    }
    if (FATAL_CLOSE_CODES.has(code)) {
      this.events.onStatus("failed", describeClose(this.events.messages, code, reason));
      return;
    }
    this.events.onStatus("reconnecting", this.events.messages.lost);
    this.retryTimer = setTimeout(() => void this.connect(false), reconnectDelayMs(this.attempt++));
  }

  private report(message?: string): void {
    if (!this.ready) return;
    const status: ConnectionStatus =
      this.machineState === "connected" ? "connected" : this.machineState === "connecting" ? "connecting" : this.machineState;
    this.events.onStatus(status, message);
  }

  private send(message: ClientMessage): void {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }
}

function describeClose(messages: ConnectionMessages, code: number, reason: string): string {
  const revoked = RevokedReason.safeParse(reason);
  if (revoked.success && (code === CloseCode.unauthorized || code === CloseCode.forbidden)) return messages.revoked(revoked.data);
  switch (code) {
    case CloseCode.unauthorized:
      return messages.closeUnauthorized;
    case CloseCode.forbidden:
      return messages.closeForbidden;
    case CloseCode.notFound:
      return messages.closeNotFound;
    case CloseCode.sessionOver:
      return messages.sessionOver(SessionOverReason.catch("learner").parse(reason));
    default:
      return messages.closed(code, reason);
  }
}
