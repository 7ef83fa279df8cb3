/**
 * A terminal client for tests and benchmarks, speaking server/terminal/protocol.ts over a real
 * WebSocket from Node. It checks that output frames arrive contiguous by byte offset and records
 * every control message.
 */
import WebSocket from "ws";
import { decodeOutput, parseServerMessage, type ClientMessage, type ServerMessage } from "../terminal/protocol";

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
        if (message.type === "reset") {
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
    hello: { token: string; offset?: number; cols?: number; rows?: number } | null,
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
    if (hello) client.send({ type: "hello", token: hello.token, offset: hello.offset ?? 0, cols: hello.cols ?? 80, rows: hello.rows ?? 24 });
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
    return this.waitFor((c) => (typeof needle === "string" ? c.text().includes(needle) : needle.test(c.text())), timeoutMs, `output ${needle}`);
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
