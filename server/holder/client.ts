/**
 * Client of the terminal holder (server/holder/labdeck-holder), the daemon on every lab
 * machine that owns the PTYs and shells. The server reaches the holder's unix socket through an
 * existing ssh2 connection (direct-streamlocal@openssh.com, or `labdeck-holder --attach` over an
 * exec channel when the SSH server refuses streamlocal) and is only a viewer: a dropped
 * connection, a restarted sshd or a dead server process leave the shells running.
 *
 * `HolderLink` is one connection (frames in, events out); `HolderTerminal` is one terminal seen
 * through successive links: it keeps the read cursor (byte offset) and the unacknowledged input,
 * so attaching it to a new link resumes output exactly where it stopped and resends input with the
 * same sequence numbers, which the holder applies once.
 *
 * Wire format (the one definition on this side; the holder's header comment is the other):
 * every frame is u32 length (big-endian, counts type + body) | u8 type | body; frames ≤ 1 MiB.
 * JSON bodies are UTF-8 objects; tagged bodies are u8 idlen | id | u64 (an offset or a seq) | bytes; a u64
 * beyond 2^53-1 has no exact number here and its frame is refused. Golden examples of every frame,
 * decoded, and of frames each side refuses, shared with the holder's tests: protocol-frames.json.
 *   client → holder: 0x01 OPEN json {id, from, tail?, cols?, rows?, mode, writer?} (from -1: the end, or the last
 *                    `tail` bytes; input seqs count per writer) · 0x02 INPUT tagged seq+bytes ·
 *                    0x03 RESIZE json {id, cols, rows} · 0x04 DETACH json {id} · 0x05 KILL json {id} ·
 *                    0x06 INPUT_AS u8 idlen | id | u8 wlen | writer | u64 seq | bytes (input numbered by
 *                    a named writer: a browser's own seqs, applied once whichever process relays them)
 *   holder → client: 0x81 HELLO json {protocol, version, bootId, instance, pid, path?, handover?, refusedUpgrade?} ·
 *                    0x82 OPENED json {id, start, end, oldest, lastSeq, spawned} ·
 *                    0x83 OUTPUT tagged offset+bytes · 0x84 ACK tagged seq ·
 *                    0x85 GONE json {id, requested, oldest} · 0x86 EXIT json {id, end, status} ·
 *                    0x87 ERROR json {message, id?} · 0x88 ACK_AS u8 idlen | id | u8 wlen | writer | u64 seq
 */
import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import type { Duplex } from "node:stream";
import type { Client } from "ssh2";
import { z } from "zod";
import { readBudget, type BudgetedReader, type ReadBudget } from "../ssh/read-budget";
import { HOLDER_MAX_INT, HolderMisbehaviourError, isHolderInt, isHolderMisbehaviour, openedInOrder } from "./misbehaviour";

/** Where the holder listens on every machine (root only, mode 0600). */
export const HOLDER_SOCKET = "/run/labdeck-holder/holder.sock";
/** Where installers put the holder; the exec fallback runs it from here. */
export const HOLDER_PATH = "/usr/local/lib/labdeck/labdeck-holder";
/** Protocol generation this client speaks; the holder's HELLO must carry the same. */
export const HOLDER_PROTOCOL = 1;
/** Largest frame either side sends or accepts, in bytes (the holder's MAX_FRAME). */
export const MAX_FRAME_BYTES = 1024 * 1024;
/** Input bytes per INPUT frame; longer writes (a paste) are split. */
const INPUT_CHUNK_BYTES = 16 * 1024;
/** Unacknowledged input a terminal keeps for resending, in bytes; beyond, write() refuses. */
export const UNACKED_INPUT_BYTES = 1024 * 1024;
/** How long the holder has to send HELLO after the channel opens, in ms. */
export const HELLO_TIMEOUT_MS = 5_000;
/** Terminal ids the holder accepts. */
export const TERMINAL_ID = /^[A-Za-z0-9_-]{1,32}$/;

/** Frame types by name (the holder's T_* constants). */
export const FRAME_TYPE = {
  OPEN: 0x01,
  INPUT: 0x02,
  RESIZE: 0x03,
  DETACH: 0x04,
  KILL: 0x05,
  INPUT_AS: 0x06,
  HELLO: 0x81,
  OPENED: 0x82,
  OUTPUT: 0x83,
  ACK: 0x84,
  GONE: 0x85,
  EXIT: 0x86,
  ERROR: 0x87,
  ACK_AS: 0x88,
} as const;

/** Every integer the holder sends (offsets, seqs, ids' counts): 0..2^53-1, exact as a number. */
const HolderInt = z.number().int().min(0).max(HOLDER_MAX_INT);

const Hello = z.object({
  protocol: HolderInt,
  version: z.string(),
  // Both name a log epoch in the database (epochs.ts) and in recordings: a machine's root (a
  // learner) can run a holder of its own, so they are bounded. The kernel's boot id is a UUID
  // ("" when unreadable); an instance is 16 hex digits.
  bootId: z.string().regex(/^[0-9a-fA-F-]{0,64}$/),
  instance: z.string().regex(/^[0-9a-zA-Z]{1,64}$/),
  pid: HolderInt,
  /** The file the holder runs from, and whether SIGUSR2 upgrades it in place (older holders: absent). */
  path: z.string().optional(),
  handover: z.boolean().optional(),
  /** The file at `path` (this version) failed to take over in place; the previous version went on with the shells. */
  refusedUpgrade: z.object({ version: z.string(), reason: z.string() }).optional(),
});
export type HolderHello = z.infer<typeof Hello>;
const Opened = z
  .object({
    id: z.string(),
    start: HolderInt,
    end: HolderInt,
    oldest: HolderInt,
    lastSeq: HolderInt,
    spawned: z.boolean(),
  })
  .refine(openedInOrder, { message: "OPENED must have oldest ≤ start ≤ end" });
export type HolderOpened = z.infer<typeof Opened>;
const Gone = z.object({ id: z.string(), requested: HolderInt, oldest: HolderInt });
/** `status`: the shell's exit code, negative for a signal (Python's waitstatus_to_exitcode). */
const Exit = z.object({ id: z.string(), end: HolderInt, status: z.number().int().nullable().optional() });
const ErrorMessage = z.object({ message: z.string(), id: z.string().optional() });

export type TerminalMode = "write" | "read";
export interface TerminalSize {
  cols: number;
  rows: number;
}

function frame(type: number, body: Uint8Array): Buffer {
  const head = Buffer.allocUnsafe(5);
  head.writeUInt32BE(body.byteLength + 1, 0);
  head.writeUInt8(type, 4);
  return Buffer.concat([head, body]);
}

function jsonFrame(type: number, value: object): Buffer {
  return frame(type, Buffer.from(JSON.stringify(value)));
}

/** u8 idlen | id | [u8 wlen | writer] | u64 seq | data: INPUT and INPUT_AS. */
function taggedFrame(type: number, id: string, seq: number, data?: Uint8Array, writer?: Buffer): Buffer {
  const tag = Buffer.from(id);
  const named = writer ? 1 + writer.length : 0;
  const head = Buffer.allocUnsafe(1 + tag.length + named + 8);
  head.writeUInt8(tag.length, 0);
  tag.copy(head, 1);
  if (writer) {
    head.writeUInt8(writer.length, 1 + tag.length);
    writer.copy(head, 2 + tag.length);
  }
  head.writeBigUInt64BE(BigInt(seq), 1 + tag.length + named);
  return frame(type, data ? Buffer.concat([head, data]) : head);
}

export interface HolderLinkEvents {
  hello: [HolderHello];
  opened: [HolderOpened];
  output: [id: string, offset: number, data: Buffer];
  ack: [id: string, seq: number];
  ackAs: [id: string, writer: string, seq: number];
  gone: [z.infer<typeof Gone>];
  exit: [z.infer<typeof Exit>];
  holderError: [z.infer<typeof ErrorMessage>];
  close: [error?: Error];
}

/** One connection to a holder; emits the holder's frames as events, parsed. */
export class HolderLink extends EventEmitter<HolderLinkEvents> {
  /** Received bytes of frames not yet complete, as they came (joined once a frame is whole). */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private closed = false;
  /** Paused by flow control (pause()); the budget's reader says when it waits its turn. */
  private flowPaused = false;
  private readonly reader: BudgetedReader;
  hello: HolderHello | null = null;

  /**
   * `budget`: a link resumed by flow control (its viewers acknowledged) handed over its channel's
   * whole buffer at once, up to the SSH window; it now reads within the process's budget.
   */
  private constructor(
    private readonly stream: Duplex,
    budget: ReadBudget = readBudget,
  ) {
    super();
    this.reader = budget.reader(
      () => this.stream.pause(),
      () => {
        if (!this.flowPaused && !this.closed) this.stream.resume();
      },
    );
    stream.on("data", (chunk: Buffer) => {
      this.receive(chunk);
      this.reader.took(chunk.length);
    });
    stream.on("error", (error: Error) => this.finish(error));
    stream.on("close", () => this.finish());
    stream.on("end", () => this.finish());
  }

  /** Wraps a byte stream to a holder and waits for its HELLO. */
  static open(stream: Duplex, timeoutMs = HELLO_TIMEOUT_MS, budget: ReadBudget = readBudget): Promise<HolderLink> {
    const link = new HolderLink(stream, budget);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => fail(new Error(`no HELLO from the holder within ${timeoutMs} ms`)), timeoutMs);
      const fail = (error?: Error) => {
        clearTimeout(timer);
        link.close();
        reject(error ?? new Error("the holder closed the connection before HELLO"));
      };
      link.once("close", fail);
      link.once("hello", () => {
        clearTimeout(timer);
        link.off("close", fail);
        if (link.hello!.protocol !== HOLDER_PROTOCOL) {
          link.close();
          reject(new HolderMisbehaviourError("protocol", `holder speaks protocol ${link.hello!.protocol}, this server ${HOLDER_PROTOCOL}`));
        } else resolve(link);
      });
    });
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Reads terminal `id` from `offset` (-1: the end, or `tail` bytes before it); a writer's shell starts if none runs. */
  open(
    id: string,
    offset: number,
    size: TerminalSize | undefined,
    mode: TerminalMode,
    options: { tail?: number; writer?: string } = {},
  ): void {
    if (!TERMINAL_ID.test(id)) throw new Error(`terminal id must match ${TERMINAL_ID}`);
    this.send(
      jsonFrame(FRAME_TYPE.OPEN, {
        id,
        from: offset,
        tail: options.tail ?? 0,
        writer: options.writer ?? "",
        ...(size && { cols: size.cols, rows: size.rows }),
        mode,
      }),
    );
  }

  input(id: string, seq: number, data: Uint8Array): void {
    this.send(taggedFrame(FRAME_TYPE.INPUT, id, seq, data));
  }

  /** Input numbered by `writer` (its own sequence, e.g. a browser's), not this link's OPEN writer. */
  inputAs(id: string, writer: string, seq: number, data: Uint8Array): void {
    if (!TERMINAL_ID.test(writer)) throw new Error(`writer must match ${TERMINAL_ID}`);
    const w = Buffer.from(writer);
    this.send(taggedFrame(FRAME_TYPE.INPUT_AS, id, seq, data, w));
  }

  resize(id: string, size: TerminalSize): void {
    this.send(jsonFrame(FRAME_TYPE.RESIZE, { id, cols: size.cols, rows: size.rows }));
  }

  detach(id: string): void {
    this.send(jsonFrame(FRAME_TYPE.DETACH, { id }));
  }

  /** Hangs up the terminal's shell (its readers then get EXIT). */
  kill(id: string): void {
    this.send(jsonFrame(FRAME_TYPE.KILL, { id }));
  }

  /** Pauses reading from the holder (its send buffer fills and it stops sending this link output). */
  pause(): void {
    this.flowPaused = true;
    this.stream.pause();
  }

  resume(): void {
    this.flowPaused = false;
    if (!this.reader.waiting) this.stream.resume();
  }

  close(): void {
    this.stream.destroy();
    this.finish();
  }

  /** Closes after what was written has gone out (a last KILL or DETACH). */
  end(): void {
    if (this.closed) return;
    this.stream.end();
    setTimeout(() => this.close(), HELLO_TIMEOUT_MS).unref?.();
  }

  private send(buffer: Buffer): void {
    if (!this.closed) this.stream.write(buffer);
  }

  private finish(error?: Error): void {
    if (this.closed) return;
    this.closed = true;
    this.stream.destroy();
    this.emit("close", error);
  }

  private receive(chunk: Buffer): void {
    // A 64 KiB OUTPUT frame comes in many SSH channel chunks: joining the partial frame with each
    // one copied it again every time (quadratic, and most of a flood's garbage); the chunks now
    // wait in a list until the frame they start is whole.
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    if (this.pendingBytes < 5) return;
    if (this.pending.length > 1) {
      if (this.pending[0]!.length < 5) this.pending = [Buffer.concat(this.pending, this.pendingBytes)];
      const length = this.pending[0]!.readUInt32BE(0);
      if (length >= 1 && length <= MAX_FRAME_BYTES && this.pendingBytes < 4 + length) return;
    }
    let buf = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    while (buf.length >= 5 && !this.closed) {
      const length = buf.readUInt32BE(0);
      if (length < 1 || length > MAX_FRAME_BYTES)
        return this.finish(new HolderMisbehaviourError("bad-frame", `holder sent a frame of ${length} bytes`));
      if (buf.length < 4 + length) break;
      const type = buf[4]!;
      const body = buf.subarray(5, 4 + length);
      buf = buf.subarray(4 + length);
      try {
        this.dispatch(type, body);
      } catch (error) {
        return this.finish(frameError(type, error));
      }
    }
    // The unparsed tail: the start of the next frame (it keeps its chunk, at most one frame, alive).
    if (buf.length) {
      this.pending = [buf];
      this.pendingBytes = buf.length;
    }
  }

  private dispatch(type: number, body: Buffer): void {
    if (type === FRAME_TYPE.ACK_AS) {
      const n = body[0]!;
      const id = body.toString("utf8", 1, 1 + n);
      const w = body[1 + n]!;
      const writer = body.toString("utf8", 2 + n, 2 + n + w);
      return void this.emit("ackAs", id, writer, readU64(body, 2 + n + w));
    }
    if (type === FRAME_TYPE.OUTPUT || type === FRAME_TYPE.ACK) {
      const n = body[0]!;
      const id = body.toString("utf8", 1, 1 + n);
      if (type === FRAME_TYPE.OUTPUT) {
        const data = body.subarray(9 + n);
        const offset = readU64(body, 1 + n);
        if (offset + data.length > HOLDER_MAX_INT)
          throw new HolderMisbehaviourError("out-of-range", `output at ${offset} ends past 2^53-1`);
        this.emit("output", id, offset, data);
      } else this.emit("ack", id, readU64(body, 1 + n));
      return;
    }
    const value: unknown = JSON.parse(body.toString("utf8"));
    switch (type) {
      case FRAME_TYPE.HELLO:
        this.hello = Hello.parse(value);
        return void this.emit("hello", this.hello);
      case FRAME_TYPE.OPENED:
        return void this.emit("opened", Opened.parse(value));
      case FRAME_TYPE.GONE:
        return void this.emit("gone", Gone.parse(value));
      case FRAME_TYPE.EXIT:
        return void this.emit("exit", Exit.parse(value));
      case FRAME_TYPE.ERROR:
        return void this.emit("holderError", ErrorMessage.parse(value));
      default:
        throw new Error("unknown frame type");
    }
  }
}

/** The u64 (an offset or a seq) at `index` of a tagged body; beyond 2^53-1 no number holds it exactly. */
function readU64(body: Buffer, index: number): number {
  const value = body.readBigUInt64BE(index);
  if (value > BigInt(HOLDER_MAX_INT)) throw new HolderMisbehaviourError("out-of-range", `u64 ${value} is beyond 2^53-1`);
  const n = Number(value);
  if (!isHolderInt(n)) throw new HolderMisbehaviourError("out-of-range", `u64 ${value} is not an exact number`);
  return n;
}

/**
 * Why a frame of `type` was refused, as a typed error: integers out of 0..2^53-1 (or OPENED's
 * offsets out of order) are `out-of-range`, anything else that does not parse is `bad-frame`.
 */
function frameError(type: number, error: unknown): HolderMisbehaviourError {
  const message = `bad frame 0x${type.toString(16)} from the holder: ${(error as Error).message}`;
  if (isHolderMisbehaviour(error)) return new HolderMisbehaviourError(error.kind, message);
  const ranged =
    error instanceof z.ZodError &&
    error.issues.some((i) => i.code === "too_big" || i.code === "too_small" || (i.code === "custom" && i.message.startsWith("OPENED")));
  return new HolderMisbehaviourError(ranged ? "out-of-range" : "bad-frame", message);
}

/** SSH connections whose server already treats them as interactive (see markInteractive). */
const interactive = new WeakSet<Client>();

/**
 * sshd turns Nagle's algorithm off (TCP_NODELAY) on a connection only when a session channel
 * runs a command; a connection that only forwards a stream keeps it on, and a holder's ACK frame
 * followed by the echo then waits for the client's delayed ACK: ~40 ms per keystroke, measured.
 * One `exec true` per connection makes sshd set it (OpenSSH ssh_packet_set_interactive). It is not
 * awaited: in a one-vCPU guest under TCG the session costs 2-3 s, which a terminal's link waited
 * for after every restart; the first keystrokes may wait for a delayed ACK until it is done.
 */
function markInteractive(client: Client): void {
  if (interactive.has(client)) return;
  interactive.add(client);
  client.exec("true", (error, channel) => {
    if (error) return; // only latency is at stake
    channel.resume();
    channel.stderr.resume();
  });
}

/** Stderr of the exec relay kept for an error message, in characters (the relay says one line). */
const STDERR_KEPT_CHARS = 500;

/** Opens a link over an SSH connection: streamlocal first, `labdeck-holder --attach` over exec when refused. */
export async function connectHolder(
  client: Client,
  options: { socketPath?: string; holderPath?: string; timeoutMs?: number } = {},
): Promise<HolderLink> {
  const socketPath = options.socketPath ?? HOLDER_SOCKET;
  markInteractive(client);
  /** What the exec relay said on stderr (why it could not reach the socket), for the error. */
  let said = "";
  const stream = await new Promise<Duplex>((resolve, reject) => {
    client.openssh_forwardOutStreamLocal(socketPath, (error, channel) => {
      if (!error) return resolve(channel);
      // Refused (AllowStreamLocalForwarding no) or no socket: try the stdio relay.
      const command = `exec python3 ${options.holderPath ?? HOLDER_PATH} --attach --socket ${socketPath}`;
      client.exec(command, (execError, exec) => {
        if (execError) return reject(new Error(`holder unreachable: streamlocal: ${error.message}; exec: ${execError.message}`));
        exec.stderr.on("data", (chunk: Buffer) => {
          if (said.length < STDERR_KEPT_CHARS) said = (said + chunk.toString("utf8")).slice(0, STDERR_KEPT_CHARS);
        });
        resolve(exec);
      });
    });
  });
  return HolderLink.open(stream, options.timeoutMs).catch((error: Error) => {
    if (isHolderMisbehaviour(error) || !said.trim()) throw error;
    throw new Error(`${error.message}: ${said.trim()}`);
  });
}

export interface HolderTerminalHandlers {
  /** Output bytes starting at `offset`; each byte is delivered once, in order. */
  onOutput(offset: number, data: Buffer): void;
  /** The holder answered OPEN (after every attach); `spawned` = a fresh shell started. */
  onOpened?(info: HolderOpened): void;
  /** The bytes from `requested` are no longer held; the terminal re-opens from `oldest` unless told otherwise. */
  onGone?(requested: number, oldest: number): void;
  /** The shell ended at `end`. */
  onExit?(end: number, status: number | null | undefined): void;
  /** The holder applied `writer`'s input (writeAs) up to `seq`. */
  onInputAck?(writer: string, seq: number): void;
}

interface UnackedInput {
  seq: number;
  data: Buffer;
}

interface UnackedNamedInput extends UnackedInput {
  writer: string;
}

/** Named writers (writeAs) whose unacknowledged input a terminal keeps; the oldest go first. */
const MAX_NAMED_WRITERS = 64;

/**
 * One terminal on a holder, kept across links: `attach(link)` after every (re)connect. Output
 * resumes at the cursor (`next`); input gets sequence numbers once the holder has said which it
 * applied last (OPENED.lastSeq), and stays until acknowledged, so a resend after a reconnect is
 * never typed twice.
 */
export class HolderTerminal {
  /** Offset of the next output byte this terminal needs; -1 = from wherever the holder is now. */
  next: number;
  /**
   * Names this writer's input sequence on the holder: two server processes writing to one shell
   * each count their own seqs, so neither's input is taken for a retry of the other's.
   */
  readonly writer = randomBytes(8).toString("hex");
  private link: HolderLink | null = null;
  private nextSeq = 0; // 0 = not known yet (no OPENED seen)
  private unacked: UnackedInput[] = [];
  private unackedBytes = 0;
  private unsequenced: Buffer[] = [];
  /** writeAs input not yet acknowledged, per writer, oldest first (resent on every attach). */
  private named = new Map<string, UnackedNamedInput[]>();
  private namedBytes = 0;
  /** The writer's size; undefined: the OPEN leaves the shell's size as it is (a new one starts at 80x24). */
  private size: TerminalSize | undefined;
  private detachers: (() => void)[] = [];

  constructor(
    readonly id: string,
    private readonly handlers: HolderTerminalHandlers,
    private readonly options: {
      mode?: TerminalMode;
      from?: number;
      /** With `from` -1: start this many bytes before the end (a fresh viewer repaints recent output). */
      tail?: number;
      size?: TerminalSize;
    } = {},
  ) {
    if (!TERMINAL_ID.test(id)) throw new Error(`terminal id must match ${TERMINAL_ID}`);
    this.next = options.from ?? -1;
    this.size = options.size;
  }

  get mode(): TerminalMode {
    return this.options.mode ?? "write";
  }

  /** Input bytes not yet acknowledged by the holder. */
  get pendingInputBytes(): number {
    return this.unackedBytes + this.namedBytes + this.unsequenced.reduce((n, b) => n + b.length, 0);
  }

  /** Attaches to a link (the previous one is forgotten) and resolves with the holder's OPENED. */
  attach(link: HolderLink): Promise<HolderOpened> {
    this.forgetLink();
    this.link = link;
    const on = <E extends keyof HolderLinkEvents>(event: E, fn: (...args: HolderLinkEvents[E]) => void) => {
      link.on(event, fn as never);
      this.detachers.push(() => link.off(event, fn as never));
    };
    const opened = new Promise<HolderOpened>((resolve, reject) => {
      on("opened", (info) => {
        if (info.id !== this.id) return;
        this.opened(info);
        resolve(info);
      });
      on("gone", (gone) => {
        if (gone.id !== this.id) return;
        this.handlers.onGone?.(gone.requested, gone.oldest);
        reject(new HolderGoneError(gone.requested, gone.oldest));
      });
      on("holderError", (refusal) => {
        // After OPENED this settles nothing; before it, the holder refused the OPEN.
        if (refusal.id === this.id) reject(new HolderMisbehaviourError("refused", `the holder refused the OPEN: ${refusal.message}`));
      });
      on("close", (error) => reject(error ?? new Error("holder link closed")));
    });
    opened.catch(() => undefined);
    on("output", (id, offset, data) => {
      if (id === this.id) this.output(offset, data);
    });
    on("ack", (id, seq) => {
      if (id === this.id) this.acked(seq);
    });
    on("ackAs", (id, writer, seq) => {
      if (id === this.id) this.ackedAs(writer, seq);
    });
    on("exit", (exit) => {
      if (exit.id === this.id) this.handlers.onExit?.(exit.end, exit.status);
    });
    link.open(this.id, this.next, this.size, this.mode, { tail: this.options.tail, writer: this.writer });
    return opened;
  }

  /** Queues keystrokes; false when too much input is unacknowledged (the holder is unreachable). */
  write(data: string | Uint8Array): boolean {
    if (this.mode !== "write") return false;
    const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : Buffer.from(data);
    if (this.pendingInputBytes + bytes.length > UNACKED_INPUT_BYTES) return false;
    if (this.nextSeq === 0) {
      this.unsequenced.push(bytes);
      return true;
    }
    for (let i = 0; i < bytes.length; i += INPUT_CHUNK_BYTES) this.sequence(bytes.subarray(i, i + INPUT_CHUNK_BYTES));
    return true;
  }

  /**
   * Queues input numbered by another writer (a browser's writer id and its own seqs, from 1):
   * kept until the holder acknowledges it and resent on every attach, so whichever server
   * process relays it, the holder applies each seq once. False when too much is unacknowledged.
   */
  writeAs(writer: string, seq: number, data: string | Uint8Array): boolean {
    if (this.mode !== "write") return false;
    if (!TERMINAL_ID.test(writer) || !Number.isSafeInteger(seq) || seq < 1) return false;
    const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : Buffer.from(data);
    if (bytes.length + 64 > MAX_FRAME_BYTES) return false;
    if (this.pendingInputBytes + bytes.length > UNACKED_INPUT_BYTES) return false;
    let queue = this.named.get(writer);
    if (!queue) {
      queue = [];
      this.named.set(writer, queue);
      for (const [old, inputs] of this.named) {
        if (this.named.size <= MAX_NAMED_WRITERS) break;
        this.namedBytes -= inputs.reduce((n, i) => n + i.data.length, 0);
        this.named.delete(old);
      }
    }
    queue.push({ writer, seq, data: bytes });
    this.namedBytes += bytes.length;
    if (this.link && !this.link.isClosed && this.nextSeq !== 0) this.link.inputAs(this.id, writer, seq, bytes);
    return true;
  }

  /** Hangs up the shell on the holder (the lab session is over). */
  kill(): void {
    if (this.mode === "write" && this.link && !this.link.isClosed) this.link.kill(this.id);
  }

  resize(size: TerminalSize): void {
    this.size = size;
    if (this.mode === "write" && this.link && !this.link.isClosed) this.link.resize(this.id, size);
  }

  /** Leaves the terminal running on the holder and stops reading it on this link. */
  detach(): void {
    if (this.link && !this.link.isClosed) this.link.detach(this.id);
    this.forgetLink();
  }

  private forgetLink(): void {
    for (const off of this.detachers) off();
    this.detachers = [];
    this.link = null;
  }

  private opened(info: HolderOpened): void {
    if (this.next < 0 || info.start !== this.next) this.next = info.start;
    if (this.nextSeq === 0 || this.nextSeq <= info.lastSeq) this.nextSeq = info.lastSeq + 1;
    // Whatever the holder applied is done; resend the rest with the same numbers.
    this.acked(info.lastSeq);
    for (const input of this.unacked) this.link!.input(this.id, input.seq, input.data);
    for (const inputs of this.named.values()) for (const input of inputs) this.link!.inputAs(this.id, input.writer, input.seq, input.data);
    const waiting = this.unsequenced;
    this.unsequenced = [];
    for (const bytes of waiting) this.write(bytes);
    this.handlers.onOpened?.(info);
  }

  private sequence(data: Buffer): void {
    const input = { seq: this.nextSeq++, data };
    this.unacked.push(input);
    this.unackedBytes += data.length;
    if (this.link && !this.link.isClosed) this.link.input(this.id, input.seq, data);
  }

  private ackedAs(writer: string, seq: number): void {
    const queue = this.named.get(writer);
    if (queue) {
      while (queue.length && queue[0]!.seq <= seq) this.namedBytes -= queue.shift()!.data.length;
      if (queue.length === 0) this.named.delete(writer);
    }
    this.handlers.onInputAck?.(writer, seq);
  }

  private acked(seq: number): void {
    while (this.unacked.length && this.unacked[0]!.seq <= seq) this.unackedBytes -= this.unacked.shift()!.data.length;
  }

  private output(offset: number, data: Buffer): void {
    if (this.next >= 0 && offset + data.length <= this.next) return; // already had it
    // offset > next cannot happen on one link (the holder sends a reader's bytes in order, or
    // GONE); should it, the bytes are still delivered at their own offset, which the handler sees.
    const fresh = this.next > offset ? data.subarray(this.next - offset) : data;
    const freshOffset = Math.max(offset, this.next);
    this.next = freshOffset + fresh.length;
    this.handlers.onOutput(freshOffset, fresh);
  }
}

/** The offset asked for is older than the oldest byte the holder keeps. */
export class HolderGoneError extends Error {
  constructor(
    readonly requested: number,
    readonly oldest: number,
  ) {
    super(`output from ${requested} is no longer held (oldest is ${oldest})`);
  }
}
