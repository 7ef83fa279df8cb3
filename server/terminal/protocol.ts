/**
 * The terminal wire protocol, shared by the browser (components/terminal) and the gateway
 * (server/terminal). Names follow the direction of travel: ClientMessage goes browser -> server,
 * ServerMessage server -> browser. Control messages are JSON text frames parsed with zod at the
 * edge; terminal output travels as binary frames (see encodeOutput) so multi-byte characters are
 * never split by a decode on the way.
 */
import { z } from "zod";

/** WebSocket path the gateway answers on; everything else is Next.js. */
export const TERMINAL_WS_PATH = "/ws/terminal";

/** Bounds on a terminal's size; a resize outside them is a protocol error. */
export const MIN_COLS = 2;
export const MAX_COLS = 500;
export const MIN_ROWS = 1;
export const MAX_ROWS = 200;

/** Largest input message in characters: a generous paste, small enough to bound one frame. */
export const MAX_INPUT_CHARS = 64 * 1024;

/** Largest text frame the server accepts, in bytes (input plus JSON framing). */
export const MAX_CLIENT_FRAME_BYTES = 4 * MAX_INPUT_CHARS + 1024;

/**
 * Output window a client may ask for in hello (bytes sent but not yet reported `consumed`):
 * smaller would stall a fast terminal on round trips, larger lets a slow page queue more.
 */
export const MIN_WINDOW_BYTES = 64 * 1024;
export const MAX_WINDOW_BYTES = 16 * 1024 * 1024;

/** The client must send `hello` within this many milliseconds of opening the socket. */
export const HELLO_TIMEOUT_MS = 5_000;

const Cols = z.number().int().min(MIN_COLS).max(MAX_COLS);
/** A client's writer id (the holder's terminal-id alphabet). */
const WriterId = z.string().regex(/^[A-Za-z0-9_-]{1,32}$/);
const Rows = z.number().int().min(MIN_ROWS).max(MAX_ROWS);

export const ClientMessage = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("hello"),
    /** Signed terminal token from the lab session API: names session, machine and mode. */
    token: z.string().min(1).max(4096),
    /**
     * Byte offset of the first output byte the client does not have yet (0 for a fresh view).
     * Offsets are the machine's terminal log offsets (holder), the same in every server process.
     */
    offset: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
    cols: Cols,
    rows: Rows,
    /** The page's writer id: its input seqs count under it (random per page, kept across reconnects). */
    writer: WriterId.optional(),
    /**
     * Flow control: the client reports the output it has written to its screen (`consumed`), and
     * the gateway keeps at most this many bytes sent beyond the last report. Without it only the
     * socket's own buffer holds the gateway back (a page that queues output in xterm never does).
     */
    window: z.number().int().min(MIN_WINDOW_BYTES).max(MAX_WINDOW_BYTES).optional(),
  }),
  z.object({
    type: z.literal("input"),
    data: z.string().min(1).max(MAX_INPUT_CHARS),
    /**
     * This input's number under the hello's writer, from 1, one per message; the client resends
     * what is not yet acknowledged after a reconnect with the same numbers, applied once.
     */
    seq: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
  }),
  z.object({ type: z.literal("resize"), cols: Cols, rows: Rows }),
  z.object({ type: z.literal("ping"), t: z.number() }),
  /** Output up to `offset` is on the client's screen (xterm has parsed it): the hello's window moves on. */
  z.object({ type: z.literal("consumed"), offset: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER) }),
]);
export type ClientMessage = z.infer<typeof ClientMessage>;

/** Connection state of the machine behind a terminal, as the gateway sees it. */
export const MachineState = z.enum([
  /** Opening SSH and the shell. */
  "connecting",
  /** The shell is live. */
  "connected",
  /** The machine does not answer (down, rebooting); the gateway keeps retrying with backoff. */
  "unreachable",
  /** The machine answered with a host key other than the pinned one; the gateway refused it. */
  "refused",
  /**
   * The machine is powered off (the learner ran poweroff, or it crashed): its provider says so.
   * Retrying continues; the browser offers to start it again.
   */
  "stopped",
]);
export type MachineState = z.infer<typeof MachineState>;

/**
 * Lines a terminal shows that are not the shell's output; the page words them in its language
 * (messages terminal.notice.*): the machine has no holder and the shell is direct (fallback), the
 * holder answers again and the direct shell is left for it (holderBack), the machine rebooted (a
 * new shell), the connection came back, the shell exited and a new one opens.
 */
export const TerminalNotice = z.enum(["fallback", "holderBack", "rebooted", "reconnected", "shellRestarted"]);
export type TerminalNotice = z.infer<typeof TerminalNotice>;

/**
 * Why a machine's terminal is not connected, for the page to word (messages terminal.reason.*):
 * reconnecting after a drop, host key not the pinned one, no answer, powered off, booting.
 */
export const StatusReason = z.enum(["reconnecting", "hostKeyMismatch", "unreachable", "poweredOff", "booting"]);
export type StatusReason = z.infer<typeof StatusReason>;

export const ServerMessage = z.discriminatedUnion("type", [
  /** Answer to hello: output frames that follow start at `offset`. */
  z.object({
    type: z.literal("ready"),
    machine: z.string(),
    mode: z.enum(["write", "read"]),
    offset: z.number().int().min(0),
  }),
  /**
   * The client's offset is no longer in the replay buffer (or lies in the future): it must clear
   * its screen; output continues from `offset`.
   */
  z.object({ type: z.literal("reset"), offset: z.number().int().min(0) }),
  /**
   * The client's offset is no longer held: clear the screen and paint `data` (the current screen
   * and some scrollback, serialized as escape sequences); output continues from `offset`.
   */
  z.object({ type: z.literal("snapshot"), offset: z.number().int().min(0), data: z.string() }),
  /**
   * A line to show that is not terminal output; it has no offset. `text` is the line in the
   * platform's default language, for pages loaded before notices had keys.
   */
  z.object({ type: z.literal("notice"), notice: TerminalNotice.optional(), text: z.string() }),
  /** The hello's writer's input is applied up to `seq`; the client forgets those messages. */
  z.object({ type: z.literal("ack"), seq: z.number().int().min(0) }),
  /**
   * The machine's SSH state changed; `reason` says why (the page words it), `message` is the same
   * in the platform's default language, for pages loaded before reasons had keys.
   */
  z.object({ type: z.literal("status"), state: MachineState, reason: StatusReason.optional(), message: z.string().optional() }),
  z.object({ type: z.literal("pong"), t: z.number() }),
  /**
   * The terminal's size, as its writer (the learner) last set it: sent to read-only viewers on
   * attach and whenever it changes, so they render at the learner's size (scaled to fit) and
   * lines wrap where the learner's shell wrapped them. Read-only viewers never resize the PTY.
   */
  z.object({ type: z.literal("size"), cols: Cols, rows: Rows }),
]);
export type ServerMessage = z.infer<typeof ServerMessage>;

/** Application close codes; each carries a reason string too. */
export const CloseCode = {
  /** Malformed or out-of-order frame. */
  badMessage: 4400,
  /** No hello in time, or the token does not verify. */
  unauthorized: 4401,
  /** Token valid but not for this (e.g. expired session). */
  forbidden: 4403,
  /** The session or machine does not exist (any more). */
  notFound: 4404,
  /**
   * The lab session was suspended (machines off after inactivity) or ended (time up, ended by
   * the learner or an admin); the close reason is a SessionOverReason, which the browser words.
   */
  sessionOver: 4410,
  /** The user already has MAX_SOCKETS_PER_USER terminal sockets open (close one first). */
  tooManySockets: 4429,
  /** The gateway failed; the client should reconnect. */
  internal: 4500,
  /** The server is shutting down; the client should reconnect. */
  goingAway: 1001,
  /**
   * This server process is restarting or draining (SIGTERM): the browser reconnects at once, with
   * no backoff and no error shown (through a proxy it reaches another process).
   */
  restarting: 4503,
} as const;

/**
 * Close reason of CloseCode.sessionOver (close reasons are at most 123 bytes: keys, not sentences).
 * `tabClosed`: not the session but this one terminal is over — the learner closed its tab (tabs.ts).
 */
export const SessionOverReason = z.enum(["suspended", "expired", "learner", "admin", "tabClosed"]);
export type SessionOverReason = z.infer<typeof SessionOverReason>;

/**
 * Close reason of a socket whose access ended while it was open (the gateway re-decides on an
 * access notice: sign-out, removal from a cohort, an ended cohort, an exam handed in): 4401
 * `signedOut`, 4403 `accessRevoked`, `cohortEnded` or `inputClosed`. The browser words them and does not retry.
 */
export const RevokedReason = z.enum(["signedOut", "accessRevoked", "cohortEnded", "inputClosed"]);
export type RevokedReason = z.infer<typeof RevokedReason>;

/** Close codes after which reconnecting cannot help. */
export const FATAL_CLOSE_CODES: ReadonlySet<number> = new Set([
  CloseCode.badMessage,
  CloseCode.unauthorized,
  CloseCode.forbidden,
  CloseCode.notFound,
  CloseCode.sessionOver,
  CloseCode.tooManySockets,
]);

/** First byte of a binary frame: what it carries. */
export const FrameKind = { output: 1 } as const;

/** Binary output frame header: kind (1 byte) + offset of the payload's first byte (float64 BE). */
export const OUTPUT_HEADER_BYTES = 9;

export function encodeOutput(offset: number, data: Uint8Array): Uint8Array {
  // Every byte is written below, so the frame need not be zero-filled first.
  const frame =
    typeof Buffer === "undefined"
      ? new Uint8Array(OUTPUT_HEADER_BYTES + data.byteLength)
      : Buffer.allocUnsafe(OUTPUT_HEADER_BYTES + data.byteLength);
  const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
  view.setUint8(0, FrameKind.output);
  view.setFloat64(1, offset);
  frame.set(data, OUTPUT_HEADER_BYTES);
  return frame;
}

/** encodeOutput of several contiguous chunks (`bytes` in all), copied once into the frame. */
export function encodeOutputChunks(offset: number, chunks: readonly Uint8Array[], bytes: number): Uint8Array {
  if (chunks.length === 1) return encodeOutput(offset, chunks[0]!);
  const frame = Buffer.allocUnsafe(OUTPUT_HEADER_BYTES + bytes);
  frame.writeUInt8(FrameKind.output, 0);
  frame.writeDoubleBE(offset, 1);
  let at = OUTPUT_HEADER_BYTES;
  for (const chunk of chunks) {
    frame.set(chunk, at);
    at += chunk.byteLength;
  }
  return frame;
}

export function decodeOutput(frame: Uint8Array): { offset: number; data: Uint8Array } | null {
  if (frame.byteLength < OUTPUT_HEADER_BYTES) return null;
  const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
  if (view.getUint8(0) !== FrameKind.output) return null;
  const offset = view.getFloat64(1);
  if (!Number.isSafeInteger(offset) || offset < 0) return null;
  return { offset, data: frame.subarray(OUTPUT_HEADER_BYTES) };
}

/** Parses one text frame from a client; never throws. */
export function parseClientMessage(text: string): ReturnType<typeof ClientMessage.safeParse> | { success: false; error: Error } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { success: false, error: new Error("frame is not JSON") };
  }
  return ClientMessage.safeParse(raw);
}

/** Parses one text frame from the server; never throws. */
export function parseServerMessage(text: string): ServerMessage | null {
  try {
    const m = ServerMessage.safeParse(JSON.parse(text));
    return m.success ? m.data : null;
  } catch {
    return null;
  }
}
