/**
 * A minimal QMP (QEMU Machine Protocol) client over the VM's unix monitor socket: one connection
 * per command (QMP serves one client at a time, and nothing here needs events), greeting,
 * `qmp_capabilities`, the command, its answer.
 */
import net from "node:net";
import { z } from "zod";

/** How long one QMP exchange may take, in ms (QEMU answers within milliseconds unless wedged). */
const QMP_TIMEOUT_MS = 5_000;

/** The parts of a QMP message this client looks at: greeting, answer, error, event. */
const QmpMessage = z.object({
  QMP: z.unknown().optional(),
  return: z.unknown().optional(),
  error: z.object({ class: z.string().optional(), desc: z.string() }).optional(),
  event: z.string().optional(),
});

/** Runs one QMP command and resolves with its `return` value; rejects with QEMU's error text. */
export function qmpCommand(
  socketPath: string,
  command: string,
  args?: Record<string, unknown>,
  timeoutMs = QMP_TIMEOUT_MS,
): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(socketPath);
    let buffer = "";
    let step: "greeting" | "capabilities" | "command" = "greeting";
    const finish = (error: Error | null, value?: unknown) => {
      clearTimeout(timer);
      socket.destroy();
      if (error) reject(new Error(`QMP ${command} on ${socketPath}: ${error.message}`));
      else resolve(value);
    };
    const timer = setTimeout(() => finish(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    socket.on("error", (error) => finish(error));
    socket.on("close", () => finish(new Error("monitor closed the connection")));
    socket.on("data", (chunk) => {
      buffer += chunk.toString("utf8");
      for (let newline = buffer.indexOf("\n"); newline >= 0; newline = buffer.indexOf("\n")) {
        const line = buffer.slice(0, newline).trim();
        buffer = buffer.slice(newline + 1);
        if (!line) continue;
        let parsed;
        try {
          parsed = QmpMessage.safeParse(JSON.parse(line));
        } catch {
          return finish(new Error(`not JSON: ${line.slice(0, 200)}`));
        }
        if (!parsed.success) return finish(new Error(`unexpected message: ${line.slice(0, 200)}`));
        const message = parsed.data;
        if (message.event) continue; // asynchronous events interleave with answers
        if (message.error) return finish(new Error(message.error.desc));
        if (step === "greeting" && message.QMP) {
          step = "capabilities";
          socket.write(JSON.stringify({ execute: "qmp_capabilities" }) + "\n");
        } else if (step === "capabilities" && "return" in message) {
          step = "command";
          socket.write(JSON.stringify(args ? { execute: command, arguments: args } : { execute: command }) + "\n");
        } else if (step === "command" && "return" in message) {
          return finish(null, message.return);
        }
      }
    });
  });
}
