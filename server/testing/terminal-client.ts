/**
 * A terminal client for tests and benchmarks, speaking server/terminal/protocol.ts over a real
 * WebSocket from Node. It checks that output frames arrive contiguous by byte offset and records
 * every control message.
 */
import { randomBytes } from "node:crypto";
import WebSocket from "ws";
import { decodeOutput, parseServerMessage, type ClientMessage, type ServerMessage } from "../terminal/protocol";
import { reconnectDelayMs } from "../../components/terminal/connection";

export class TerminalTestClient {
  readonly messages: ServerMessage[] = [];
  /** Output bytes received, in order. */
  readonly chunks: Buffer[] = [];
  /** Offset of the next byte expected. */
  offset: number;
  /** Frames whose offset did not continue the previous one (must stay empty). */
  readonly gaps: { expected: number; got: number }[] = [];
  closed: { code: number; reason: string } | null = null;
  private waiters: (() => void)[] = [];

  private constructor(
    readonly ws: WebSocket,
    startOffset: number,
  ) {
    this.offset = startOffset;
    ws.on("message", (data: Buffer, isBinary) => {
      if (isBinary) {
        const frame = decodeOutput(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
        if (!frame) throw new Error("undecodable output frame");
        if (frame.offset !== this.offset) this.gaps.push({ expected: this.offset, got: frame.offset });
        this.chunks.push(Buffer.from(frame.data));
        this.offset = frame.offset + frame.data.byteLength;
      } else {
        const message = parseServerMessage(data.toString("utf8"));
        if (!message) throw new Error(`unparseable server message: ${data.toString("utf8")}`);
        if (message.type === "reset" || message.type === "snapshot") {
          this.chunks.length = 0;
          this.offset = message.offset;
        }
        this.messages.push(message);
      }
      this.wake();
    });
    ws.on("close", (code, reason) => {
      this.closed = { code, reason: reason.toString("utf8") };
      this.wake();
    });
  }

  /** Opens a socket; sends hello unless `hello` is null (for protocol-violation tests). */
  static async connect(
    url: string,
    hello: { token: string; offset?: number; cols?: number; rows?: number; writer?: string; window?: number } | null,
    headers?: Record<string, string>,
  ): Promise<TerminalTestClient> {
    // A browser always sends Origin; the gateway refuses a socket without one. Default: the server's own.
    const origin = new URL(url.replace(/^ws/, "http")).origin;
    const ws = new WebSocket(url, { headers: { origin, ...headers } });
    const client = new TerminalTestClient(ws, hello?.offset ?? 0);
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
      ws.once("unexpected-response", (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    });
    if (hello) {
      const { token, offset = 0, cols = 80, rows = 24, writer, window } = hello;
      client.send({ type: "hello", token, offset, cols, rows, writer, window });
    }
    return client;
  }

  send(message: ClientMessage): void {
    this.ws.send(JSON.stringify(message));
  }

  sendRaw(data: string | Buffer, binary = false): void {
    this.ws.send(data, { binary });
  }

  input(data: string): void {
    this.send({ type: "input", data });
  }

  /** All output received since the last reset, decoded as UTF-8. */
  text(): string {
    return Buffer.concat(this.chunks).toString("utf8");
  }

  /** Output bytes since the last reset. */
  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }

  async waitFor(predicate: (client: this) => boolean, timeoutMs = 10_000, what = "condition"): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this)) {
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(`timed out waiting for ${what}; last output: ${JSON.stringify(this.text().slice(-300))}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 250));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  waitForText(needle: string | RegExp, timeoutMs = 10_000): Promise<void> {
    return this.waitFor(
      (c) => (typeof needle === "string" ? c.text().includes(needle) : needle.test(c.text())),
      timeoutMs,
      `output ${needle}`,
    );
  }

  async waitForClose(timeoutMs = 10_000): Promise<{ code: number; reason: string }> {
    await this.waitFor((c) => c.closed !== null, timeoutMs, "close");
    return this.closed!;
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.ws.close(1000);
    return this.waitForClose().then(() => undefined);
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}

/**
 * What a browser page does (components/terminal/connection.ts), from Node: one terminal seen
 * through successive sockets. It keeps its offset and every byte in order across reconnects
 * (a gap or a repeat is recorded, never papered over), numbers input under its own writer id and
 * keeps it until acknowledged, resending it after every reconnect with the same numbers, and
 * reconnects by itself every `retryMs` while `url()` has no server.
 */
export class ResumingTestClient {
  readonly writer = randomBytes(8).toString("hex");
  /** Output bytes in order since the last snapshot or reset. */
  readonly chunks: Buffer[] = [];
  offset = 0;
  readonly gaps: { expected: number; got: number }[] = [];
  readonly snapshots: { offset: number; data: string }[] = [];
  readonly resets: number[] = [];
  readonly notices: string[] = [];
  /** Sockets opened (1 = never reconnected). */
  connects = 0;
  /** Highest input seq acknowledged. */
  acked = 0;
  private unacked: { seq: number; data: string }[] = [];
  private nextSeq = 1;
  private ws: WebSocket | null = null;
  private ready = false;
  private stopped = false;
  private waiters: (() => void)[] = [];
  private paused = false;
  private kept = 0;
  /** Texts being looked for in every byte received from now on (see watch). */
  private watches: { text: string; seen: boolean; carry: string }[] = [];
  /** Reconnect attempts since the last ready (browserBackoff). */
  private attempt = 0;

  constructor(
    private readonly url: () => string,
    private readonly token: string,
    private readonly options: {
      retryMs?: number;
      /** Reconnect as a browser page does (connection.ts's backoff, reset once ready) instead of every retryMs. */
      browserBackoff?: boolean;
      size?: { cols: number; rows: number };
      /** Keep only about this many output bytes (a flood); default all. */
      keepBytes?: number;
    } = {},
  ) {}

  start(): void {
    this.connect();
  }

  get isReady(): boolean {
    return this.ready;
  }

  get pendingInputs(): number {
    return this.unacked.length;
  }

  input(data: string): void {
    const input = { seq: this.nextSeq++, data };
    this.unacked.push(input);
    if (this.ready) this.send({ type: "input", ...input });
  }

  /** Stops reading the socket (a reader on a bad link): the server's send queue fills. */
  pause(): void {
    this.paused = true;
    (this.ws as unknown as { _socket?: { pause(): void } })?._socket?.pause();
  }

  resume(): void {
    this.paused = false;
    (this.ws as unknown as { _socket?: { resume(): void } })?._socket?.resume();
  }

  text(): string {
    return Buffer.concat(this.chunks).toString("utf8");
  }

  /** The last `bytes` (about) of output, cheap on a long stream. */
  tail(bytes: number): string {
    const parts: Buffer[] = [];
    let n = 0;
    for (let i = this.chunks.length - 1; i >= 0 && n < bytes; i--) {
      parts.unshift(this.chunks[i]!);
      n += this.chunks[i]!.length;
    }
    return Buffer.concat(parts).toString("utf8");
  }

  /**
   * Looks for `text` in every output byte and snapshot received from now on, however many are
   * dropped by keepBytes or a later snapshot before anyone asks: `seen()` says whether it came.
   */
  watch(text: string): { seen: () => boolean } {
    const w = { text, seen: false, carry: "" };
    this.watches.push(w);
    return { seen: () => w.seen };
  }

  private look(data: string, fresh: boolean): void {
    for (const w of this.watches) {
      const hay = (fresh ? "" : w.carry) + data;
      if (hay.includes(w.text)) w.seen = true;
      w.carry = w.text.length > 1 ? hay.slice(-(w.text.length - 1)) : "";
    }
    // A text seen is not looked for again (a flood's chunks are then no longer decoded for it).
    this.watches = this.watches.filter((w) => !w.seen);
  }

  stop(): void {
    this.stopped = true;
    this.ws?.close(1000);
  }

  async waitFor(predicate: (client: this) => boolean, timeoutMs = 10_000, what = "condition"): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this)) {
      const left = deadline - Date.now();
      if (left <= 0) {
        const state = `offset ${this.offset}, ${this.snapshots.length} snapshot(s), ${this.resets.length} reset(s), ${this.connects} socket(s), ready ${this.ready}`;
        throw new Error(`timed out waiting for ${what} (${state}); last output: ${JSON.stringify(this.text().slice(-300))}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 100));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  private connect(): void {
    if (this.stopped) return;
    const url = this.url();
    const ws = new WebSocket(url, { headers: { origin: new URL(url.replace(/^ws/, "http")).origin } });
    this.ws = ws;
    this.connects++;
    ws.on("open", () => {
      const size = this.options.size ?? { cols: 80, rows: 24 };
      ws.send(
        JSON.stringify({ type: "hello", token: this.token, offset: this.offset, writer: this.writer, ...size } satisfies ClientMessage),
      );
      if (this.paused) this.pause();
    });
    ws.on("message", (data: Buffer, isBinary) => {
      if (isBinary) this.output(data);
      else this.control(data.toString("utf8"));
      this.wake();
    });
    ws.on("error", () => undefined);
    ws.on("close", () => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.ready = false;
      this.wake();
      if (this.stopped) return;
      setTimeout(() => this.connect(), this.options.browserBackoff ? reconnectDelayMs(this.attempt++) : (this.options.retryMs ?? 100));
    });
  }

  private control(text: string): void {
    const message = parseServerMessage(text);
    if (!message) throw new Error(`unparseable server message: ${text}`);
    switch (message.type) {
      case "ready":
        this.ready = true;
        this.attempt = 0;
        for (const input of this.unacked) this.send({ type: "input", ...input });
        return;
      case "reset":
        this.resets.push(message.offset);
        this.chunks.length = 0;
        this.kept = 0;
        this.offset = message.offset;
        return;
      case "snapshot":
        this.snapshots.push({ offset: message.offset, data: message.data });
        this.look(message.data, true);
        this.chunks.length = 0;
        this.kept = 0;
        this.offset = message.offset;
        return;
      case "notice":
        this.notices.push(message.text);
        return;
      case "ack":
        this.acked = Math.max(this.acked, message.seq);
        while (this.unacked.length && this.unacked[0]!.seq <= message.seq) this.unacked.shift();
        return;
      default:
        return;
    }
  }

  private output(data: Buffer): void {
    const frame = decodeOutput(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    if (!frame) throw new Error("undecodable output frame");
    const end = frame.offset + frame.data.byteLength;
    if (end <= this.offset) return; // the browser drops what it has (connection.ts)
    if (frame.offset > this.offset) {
      this.gaps.push({ expected: this.offset, got: frame.offset });
      this.ws?.close(4000, "output gap");
      return;
    }
    const chunk = Buffer.from(frame.data.subarray(this.offset - frame.offset));
    this.chunks.push(chunk);
    if (this.watches.length) this.look(chunk.toString("utf8"), false);
    this.kept += chunk.length;
    while (this.options.keepBytes && this.kept > this.options.keepBytes && this.chunks.length > 1) this.kept -= this.chunks.shift()!.length;
    this.offset = end;
  }

  private send(message: ClientMessage): void {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
