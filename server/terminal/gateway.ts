/**
 * WebSocket adapter of the terminals (terminal.ts). Per socket: `hello` with a signed token must come
 * first (within HELLO_TIMEOUT_MS) and `authorize` must accept the socket's request for it (the
 * signed-in user the token names, still allowed on the session); then input, resize and ping.
 * Output goes out as binary frames numbered by byte offset. Every frame is parsed with zod; anything malformed closes the socket
 * with a 44xx code and a reason, and never affects other sockets.
 */
import type { IncomingMessage } from "node:http";
import type { Logger } from "pino";
import type { RawData, WebSocket } from "ws";
import {
  CloseCode,
  encodeOutputChunks,
  HELLO_TIMEOUT_MS,
  parseClientMessage,
  type ClientMessage,
  type MachineState,
  type ServerMessage,
  type SessionOverReason,
  type StatusReason,
  type TerminalNotice,
} from "./protocol";
import { statusReasonText, terminalNoticeText } from "../i18n/locale";
import { DEFAULT_LOCALE } from "../i18n/locales";
import { metrics } from "../ops/metrics";
import type { TerminalRegistry } from "./registry";
import type { Terminal, Viewer } from "./terminal";
import type { PtySize } from "./pty";
import { verifyTerminalToken, type TerminalClaims } from "./token";

/** Bytes queued on one socket above which it counts as backed up... */
export const SOCKET_HIGH_WATER_BYTES = 1024 * 1024;
/** ...and below which it takes output again. */
export const SOCKET_LOW_WATER_BYTES = 256 * 1024;
/** Largest output frame; chunks are coalesced up to this size. */
export const MAX_FRAME_BYTES = 64 * 1024;
/** Server-side WebSocket ping interval; a socket that misses one pong is dropped. */
export const SOCKET_PING_INTERVAL_MS = 30_000;

/** Messages a client may send between hello and ready (typing ahead); more is abuse. */
const MAX_EARLY_MESSAGES = 256;

export interface GatewayDeps {
  secret: Buffer;
  terminals: TerminalRegistry;
  log: Logger;
  /** The learner pressed Enter in a terminal of this session (the grader checks soon after). */
  onEnter?: (sessionId: string) => void;
  /** A writer typed in a terminal of this session (it is not idle). */
  onInput?: (sessionId: string) => void;
  /**
   * Whether the socket's HTTP request (its cookies) may use a verified token's claims: null to
   * allow, or the close code (4401 not signed in, 4403 not allowed) and reason.
   */
  authorize: TerminalAuthorizer;
  /** A viewer attached to or left a terminal (instructors' read-only watching is shown to the learner and audited). */
  onViewer?: (event: { sessionId: string; machine: string; mode: "write" | "read"; userId: string; attached: boolean }) => void;
  /** Open sockets per user (the token's subject), shared by every socket of one gateway; with maxSocketsPerUser. */
  userSockets?: Map<string, number>;
  /** Beyond this many sockets for one user a hello is refused with CloseCode.tooManySockets. */
  maxSocketsPerUser?: number;
  /** Attached sockets by user, shared by every socket of one gateway: what recheckUser walks. */
  liveSockets?: LiveSockets;
}

/**
 * The attached sockets of one gateway by user (the token's subject). An access notice for a user
 * makes each of that user's sockets ask `authorize` again (phase "recheck", with the cookies of
 * its upgrade request) and close with the refusal's code and reason when it is refused now.
 */
export class LiveSockets {
  private readonly byUser = new Map<string, Set<() => Promise<void>>>();

  /** Registers a socket's recheck; returns the unregister function. */
  add(userId: string, recheck: () => Promise<void>): () => void {
    let set = this.byUser.get(userId);
    if (!set) this.byUser.set(userId, (set = new Set()));
    set.add(recheck);
    return () => {
      set.delete(recheck);
      if (set.size === 0 && this.byUser.get(userId) === set) this.byUser.delete(userId);
    };
  }

  /** Re-decides every attached socket of `userId` (null: of everyone, after missed notices). */
  async recheckUser(userId: string | null): Promise<void> {
    const sets = userId === null ? [...this.byUser.values()] : [this.byUser.get(userId) ?? new Set()];
    await Promise.all(sets.flatMap((set) => [...set].map((recheck) => recheck())));
  }
}

/** Per-user cap on terminal sockets (a learner's lab page opens one per machine, watchers one per pane). */
export const MAX_SOCKETS_PER_USER = 24;

/**
 * `phase` "hello" at attach; "recheck" when an access notice asks again about an attached socket
 * (the refusal then names what changed: a RevokedReason, or 4410 for a session that ended).
 */
export type TerminalAuthorizer = (
  request: IncomingMessage,
  claims: TerminalClaims,
  phase?: "hello" | "recheck",
) => Promise<{ code: number; reason: string } | null>;

/**
 * WebSocket viewer of one terminal. Output chunks that arrive in the same event-loop turn are
 * sent as one frame (sshd hands over ~4 KB per read; one frame each costs a syscall and an
 * allocation apiece), and bytes queued on the socket are counted for backpressure. A client that
 * asked for a window in hello is also backed up while more than that many bytes are sent beyond
 * its last `consumed` report: a page whose xterm queues output (the socket itself never fills,
 * as the page reads it at once) then holds the terminal back instead of the whole process.
 */
class SocketViewer implements Viewer {
  private queued = 0;
  private blocked = false;
  /** Contiguous output not yet framed: first offset and chunks. */
  private pendingOffset = 0;
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  private flushScheduled = false;
  /** Offset right after the last byte sent, and the client's last `consumed` offset (window clients). */
  private sentOffset: number;
  private consumedOffset: number;
  terminal: Terminal | null = null;

  constructor(
    private readonly ws: WebSocket,
    private readonly machine: string,
    readonly mode: "write" | "read",
    readonly writer: string | undefined,
    startOffset: number,
    private readonly window?: number,
  ) {
    this.sentOffset = this.consumedOffset = startOffset;
  }

  sendOutput(offset: number, chunk: Uint8Array): boolean {
    if (this.ws.readyState !== this.ws.OPEN) return true;
    if (this.pending.length === 0) this.pendingOffset = offset;
    metrics().terminalBytes.inc({ direction: "out" }, chunk.byteLength);
    this.pending.push(chunk);
    this.pendingBytes += chunk.byteLength;
    this.queued += chunk.byteLength;
    this.sentOffset = offset + chunk.byteLength;
    if (this.pendingBytes >= MAX_FRAME_BYTES) this.flush();
    else if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
    if (this.queued >= SOCKET_HIGH_WATER_BYTES || this.overWindow()) this.blocked = true;
    return !this.blocked;
  }

  /** The client has written output up to `offset` to its screen. */
  consumed(offset: number): void {
    if (this.window === undefined) return;
    this.consumedOffset = Math.max(this.consumedOffset, Math.min(offset, this.sentOffset));
    this.maybeDrained();
  }

  private overWindow(): boolean {
    return this.window !== undefined && this.sentOffset - this.consumedOffset >= this.window;
  }

  private maybeDrained(): void {
    if (!this.blocked || this.queued > SOCKET_LOW_WATER_BYTES) return;
    // Half the window free again before more is sent: fewer, larger pulls.
    if (this.window !== undefined && this.sentOffset - this.consumedOffset > this.window / 2) return;
    this.blocked = false;
    this.terminal?.drained(this);
  }

  /** Output continues from `offset` on the client (a snapshot or reset moved it). */
  private moved(offset: number): void {
    this.sentOffset = this.consumedOffset = offset;
    this.maybeDrained();
  }

  sendReset(offset: number): void {
    this.send({ type: "reset", offset });
    this.moved(offset);
  }

  sendSnapshot(offset: number, data: string): void {
    this.send({ type: "snapshot", offset, data });
    this.moved(offset);
  }

  sendNotice(notice: TerminalNotice): void {
    // The words in the platform's language too, for pages loaded before notices had keys.
    this.send({ type: "notice", notice, text: terminalNoticeText(DEFAULT_LOCALE, notice, this.machine) });
  }

  sendAck(seq: number): void {
    this.send({ type: "ack", seq });
  }

  sendStatus(state: MachineState, reason?: StatusReason): void {
    const message = reason && statusReasonText(DEFAULT_LOCALE, reason, this.machine);
    this.send({ type: "status", state, reason, message });
  }

  sendSize(size: PtySize): void {
    this.send({ type: "size", cols: size.cols, rows: size.rows });
  }

  end(reason: SessionOverReason): void {
    this.flush();
    this.ws.close(CloseCode.sessionOver, reason);
  }

  send(message: ServerMessage): void {
    this.flush(); // control messages keep their place after the output before them
    if (this.ws.readyState === this.ws.OPEN) this.ws.send(JSON.stringify(message));
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.pending.length === 0) return;
    const chunks = this.pending;
    const bytes = this.pendingBytes;
    this.pending = [];
    this.pendingBytes = 0;
    if (this.ws.readyState !== this.ws.OPEN) {
      this.queued -= bytes;
      return;
    }
    const frame = encodeOutputChunks(this.pendingOffset, chunks, bytes); // one copy, not a join and a copy
    this.ws.send(frame, { binary: true }, () => {
      this.queued -= bytes;
      this.maybeDrained();
    });
  }
}

/** How long a socket the gateway closed may take to finish the close handshake before it is cut. */
const CLOSE_GRACE_MS = 2_000;

export function handleTerminalSocket(ws: WebSocket, request: IncomingMessage, deps: GatewayDeps): void {
  new TerminalSocket(ws, request, deps);
}

type HelloMessage = Extract<ClientMessage, { type: "hello" }>;

/**
 * One browser socket: `hello` first, then the terminal its token names, authorized and attached;
 * then input, resize, ping and `consumed` until the socket closes.
 */
class TerminalSocket {
  private readonly remote: string | undefined;
  private viewer: SocketViewer | null = null;
  private sessionId: string | undefined;
  private alive = true;
  private attachedAs: { sessionId: string; machine: string; mode: "write" | "read"; userId: string } | null = null;
  /** Set once the gateway decided to close: later frames are dropped unread and unlogged. */
  private closing = false;
  private countedUser: string | null = null;
  private unregisterLive: (() => void) | null = null;
  /** Messages that arrived while the terminal was being attached; applied in order after it. */
  private early: ClientMessage[] | null = null;
  /**
   * The last input seq this socket carried. A page sends its numbers in order on one socket (its
   * resends after a reconnect too), so a gap means input was lost or reordered on the way; the
   * holder applies each number once and would then treat the late lower one as a repeat and drop
   * it without a word. The socket is closed instead (4400 with that reason, which the page shows).
   */
  private lastInputSeq: number | null = null;
  private readonly helloTimer: NodeJS.Timeout;
  private readonly pingTimer: NodeJS.Timeout;

  constructor(
    private readonly ws: WebSocket,
    private readonly request: IncomingMessage,
    private readonly deps: GatewayDeps,
  ) {
    this.remote = request.socket.remoteAddress;
    this.helloTimer = setTimeout(() => this.close(CloseCode.unauthorized, "hello timeout"), HELLO_TIMEOUT_MS);
    this.pingTimer = setInterval(() => {
      if (!this.alive) return ws.terminate();
      this.alive = false;
      ws.ping();
    }, SOCKET_PING_INTERVAL_MS);
    ws.on("pong", () => (this.alive = true));
    ws.on("message", (data: RawData, isBinary: boolean) => this.message(data, isBinary));
    ws.on("close", () => this.closed());
    ws.on("error", (error) => deps.log.warn({ remote: this.remote, err: error.message }, "terminal socket error"));
  }

  private close(code: number, reason: string): void {
    if (this.closing) return;
    this.closing = true;
    this.deps.log.info({ remote: this.remote, code, reason }, "terminal socket closed by gateway");
    this.ws.close(code, reason);
    // A client that ignores the close handshake is cut after a short grace.
    setTimeout(() => this.ws.terminate(), CLOSE_GRACE_MS).unref();
  }

  private message(data: RawData, isBinary: boolean): void {
    if (this.closing) return;
    if (isBinary) return this.close(CloseCode.badMessage, "binary frames are not accepted from clients");
    const parsed = parseClientMessage(rawToString(data));
    if (!parsed.success) return this.close(CloseCode.badMessage, "malformed message");
    const message = parsed.data!;
    if (this.viewer) return this.apply(message);
    if (this.early) {
      if (message.type === "hello") return this.close(CloseCode.badMessage, "hello sent twice");
      if (this.early.length >= MAX_EARLY_MESSAGES) return this.close(CloseCode.badMessage, "too many messages before ready");
      this.early.push(message);
      return;
    }
    if (message.type !== "hello") return this.close(CloseCode.unauthorized, "hello must come first");
    this.hello(message);
  }

  private apply(message: ClientMessage): void {
    const viewer = this.viewer;
    if (!viewer?.terminal) return;
    switch (message.type) {
      case "hello":
        return this.close(CloseCode.badMessage, "hello sent twice");
      case "input":
        if (message.seq !== undefined) {
          if (this.lastInputSeq !== null && message.seq !== this.lastInputSeq + 1) {
            return this.close(CloseCode.badMessage, "input out of order");
          }
          this.lastInputSeq = message.seq;
        }
        if (!viewer.terminal.input(viewer, message.data, message.seq)) return;
        metrics().terminalBytes.inc({ direction: "in" }, Buffer.byteLength(message.data));
        this.deps.onInput?.(this.sessionId!);
        if (message.data.includes("\r")) this.deps.onEnter?.(this.sessionId!);
        return;
      case "resize":
        viewer.terminal.resize(viewer, { cols: message.cols, rows: message.rows });
        return;
      case "ping":
        viewer.send({ type: "pong", t: message.t });
        return;
      case "consumed":
        viewer.consumed(message.offset);
        return;
    }
  }

  /** The token must verify and `authorize` accept it; messages that come meanwhile wait in `early`. */
  private hello(message: HelloMessage): void {
    clearTimeout(this.helloTimer);
    const claims = verifyTerminalToken(this.deps.secret, message.token);
    if (!claims) return this.close(CloseCode.unauthorized, "invalid or expired token");
    if (!this.countUser(claims.sub)) return this.close(CloseCode.tooManySockets, "too many terminal sockets for this user");
    this.early = [];
    this.deps
      .authorize(this.request, claims)
      .then(async (denied) => {
        if (denied) return this.close(denied.code, denied.reason);
        return this.deps.terminals.get(claims.sid, claims.m, claims.n ?? 1);
      })
      .then((terminal) => {
        if (terminal === undefined) return; // refused above
        if (!terminal) return this.close(CloseCode.notFound, "no such session or machine");
        this.attach(terminal, claims, message);
      })
      .catch((error: Error) => {
        this.deps.log.error({ err: error.message, sid: claims.sid }, "terminal attach failed");
        this.close(CloseCode.internal, "could not open the terminal");
      });
  }

  /** Counts this socket among its user's (with deps.userSockets); false when the user has too many open. */
  private countUser(userId: string): boolean {
    const sockets = this.deps.userSockets;
    if (!sockets) return true;
    const open = sockets.get(userId) ?? 0;
    if (open >= (this.deps.maxSocketsPerUser ?? MAX_SOCKETS_PER_USER)) return false;
    sockets.set(userId, open + 1);
    this.countedUser = userId;
    return true;
  }

  private attach(terminal: Terminal, claims: TerminalClaims, hello: HelloMessage): void {
    const viewer = new SocketViewer(
      this.ws,
      terminal.machine,
      claims.mode,
      claims.mode === "write" ? hello.writer : undefined,
      hello.offset,
      hello.window,
    );
    viewer.terminal = terminal;
    if (this.ws.readyState !== this.ws.OPEN) {
      // The page closed while the terminal was being opened: what it typed still goes to the shell.
      terminal.attach(viewer, hello.offset);
      for (const m of this.early ?? []) if (m.type === "input") terminal.input(viewer, m.data, m.seq);
      terminal.detach(viewer);
      return;
    }
    this.sessionId = claims.sid;
    this.viewer = viewer;
    viewer.send({ type: "ready", machine: terminal.machine, mode: claims.mode, offset: hello.offset });
    terminal.attach(viewer, hello.offset, { cols: hello.cols, rows: hello.rows });
    for (const m of this.early ?? []) this.apply(m);
    this.early = null;
    this.attachedAs = { sessionId: claims.sid, machine: claims.m, mode: claims.mode, userId: claims.sub };
    this.unregisterLive = this.deps.liveSockets?.add(claims.sub, () => this.recheck(claims)) ?? null;
    metrics().terminalSockets.inc({ mode: claims.mode });
    this.deps.onViewer?.({ ...this.attachedAs, attached: true });
  }

  /** An access notice: `authorize` decides again, and a refusal now closes the socket. */
  private async recheck(claims: TerminalClaims): Promise<void> {
    const denied = await this.deps.authorize(this.request, claims, "recheck").catch((error: Error) => {
      this.deps.log.warn({ err: error.message, sid: claims.sid }, "terminal access recheck failed; socket kept");
      return null;
    });
    if (denied) this.close(denied.code, denied.reason);
  }

  private closed(): void {
    this.closing = true;
    this.unregisterLive?.();
    const sockets = this.deps.userSockets;
    if (this.countedUser && sockets) {
      const left = (sockets.get(this.countedUser) ?? 1) - 1;
      if (left > 0) sockets.set(this.countedUser, left);
      else sockets.delete(this.countedUser);
    }
    clearTimeout(this.helloTimer);
    clearInterval(this.pingTimer);
    if (this.viewer) this.viewer.terminal?.detach(this.viewer);
    if (this.attachedAs) {
      metrics().terminalSockets.dec({ mode: this.attachedAs.mode });
      this.deps.onViewer?.({ ...this.attachedAs, attached: false });
    }
  }
}

function rawToString(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  return Buffer.from(data as ArrayBuffer).toString("utf8");
}
