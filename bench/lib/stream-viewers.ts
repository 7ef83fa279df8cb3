/**
 * Child process of bench/typing-under-load.ts: the other learners' browsers. Each viewer is a
 * WebSocket client that reads like the lab page does — every output frame goes into an xterm.js
 * terminal (@xterm/headless: the same parser, no paint) — and, when `LABDECK_BENCH_ACK` is set,
 * reports what xterm has written (`consumed`, with a window in hello) as
 * components/terminal/connection.ts does, when the protocol has that message. Driven over IPC:
 *   {cmd: "open"}  connect every token, type `yes` in each, reply {opened}
 *   {cmd: "close"} close every socket (the shells keep running `yes`), reply {closed}
 *   {cmd: "stats"} reply {bytes} (output bytes received so far, all viewers)
 * Config in LABDECK_BENCH_STREAMS: JSON {url, tokens: string[], parse?: boolean}. With `parse:
 * false` a viewer reports each frame consumed as it arrives, without xterm.js: a browser on
 * another computer that keeps up, so the streams cost this machine only what the server spends.
 */
import { randomBytes } from "node:crypto";
import headlessPkg from "@xterm/headless";
import WebSocket from "ws";
import { ClientMessage, decodeOutput, parseServerMessage } from "../../server/terminal/protocol";

const { Terminal } = headlessPkg; // CommonJS package: its named exports are not visible to ESM
const config = JSON.parse(process.env.LABDECK_BENCH_STREAMS ?? "{}") as { url: string; tokens: string[]; parse?: boolean };
let received = 0;
/** The page's flow control (connection.ts), where this checkout's protocol has it. */
const flow = ClientMessage.safeParse({ type: "consumed", offset: 0 }).success
  ? ((await import("../../components/terminal/connection")) as unknown as { OUTPUT_WINDOW_BYTES: number; CONSUMED_EVERY_BYTES: number })
  : null;

class StreamViewer {
  private ws: WebSocket | null = null;
  private readonly term = new Terminal({ cols: 120, rows: 40, scrollback: 5_000, allowProposedApi: true });
  private readonly writer = randomBytes(8).toString("hex");
  private offset = 0;
  private reported = 0;

  constructor(private readonly token: string) {}

  open(): Promise<void> {
    const origin = new URL(config.url.replace(/^ws/, "http")).origin;
    const ws = new WebSocket(config.url, { headers: { origin } });
    this.ws = ws;
    return new Promise((resolve, reject) => {
      ws.on("open", () =>
        ws.send(
          JSON.stringify({
            type: "hello",
            token: this.token,
            offset: this.offset,
            writer: this.writer,
            cols: 120,
            rows: 40,
            window: flow?.OUTPUT_WINDOW_BYTES,
          }),
        ),
      );
      ws.on("error", reject);
      ws.on("message", (data: Buffer, isBinary) => {
        if (!isBinary) {
          const message = parseServerMessage(data.toString("utf8"));
          if (message?.type === "ready") {
            ws.send(JSON.stringify({ type: "input", seq: 1, data: "yes\r" }));
            resolve();
          }
          if (message?.type === "snapshot") this.offset = this.reported = message.offset;
          return;
        }
        const frame = decodeOutput(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
        if (!frame) return;
        received += frame.data.byteLength;
        const end = (this.offset = frame.offset + frame.data.byteLength);
        const consumed = () => {
          if (!flow || end - this.reported < flow.CONSUMED_EVERY_BYTES || ws.readyState !== ws.OPEN) return;
          this.reported = end;
          ws.send(JSON.stringify({ type: "consumed", offset: end }));
        };
        if (config.parse === false) consumed();
        else this.term.write(frame.data, consumed);
      });
    });
  }

  close(): void {
    this.ws?.close(1000, "page closed");
    this.ws = null;
  }
}

const viewers = config.tokens.map((t) => new StreamViewer(t));
process.on("message", (message: { cmd: string }) => {
  if (message.cmd === "open") void Promise.all(viewers.map((v) => v.open())).then(() => process.send!({ opened: true }));
  else if (message.cmd === "close") {
    for (const v of viewers) v.close();
    process.send!({ closed: true });
  } else if (message.cmd === "stats") process.send!({ bytes: received });
});
process.send!({ up: true });
