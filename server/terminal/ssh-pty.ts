/**
 * A terminal's shell straight over SSH, when the machine has no holder (the fallback): one SSH
 * connection per shell with a PTY. The shell ends with this process.
 */
import type { ClientChannel } from "ssh2";
import { connectSsh, type SshEndpoint } from "../ssh/connect";
import { DEFAULT_PTY_SIZE, type PtyChannel, type PtyConnector, type PtyHandlers, type PtySize } from "./pty";

/** Terminal type announced to the remote PTY; xterm.js implements it. */
const TERM = "xterm-256color";

/** Browser writers whose last input seq a direct PTY remembers (the oldest are forgotten). */
const MAX_TYPED_WRITERS = 64;

/**
 * Opens one connection per shell, so that one terminal's reconnect never disturbs another.
 * The shell is sshd's login shell with a PTY. (Running it in dtach so it would outlive the
 * gateway was tried and dropped: dtach discards output a slow reader cannot take, which lost
 * bytes under backpressure; see ARCHITECTURE.md.)
 */
export function sshConnector(endpoint: SshEndpoint): PtyConnector {
  // The highest input seq typed per browser writer: a resend after a reconnect to this process
  // is typed once (the shell ends with this process, so memory is the right place here).
  const typed = new Map<string, number>();
  return {
    machine: endpoint.name,
    async open(size: PtySize | undefined, handlers: PtyHandlers): Promise<PtyChannel> {
      const client = await connectSsh(endpoint);
      const { cols, rows } = size ?? DEFAULT_PTY_SIZE;
      const pty = { term: TERM, cols, rows };
      const stream = await new Promise<ClientChannel>((resolve, reject) => {
        // The locale (UTF-8 for Japanese) is the machine's own setting, not sent from here:
        // sshd drops client environment unless AcceptEnv allows it.
        client.shell(pty, (error, channel) => (error ? reject(error) : resolve(channel)));
      }).catch((error: Error) => {
        client.end();
        throw new Error(`${endpoint.name}: could not open a shell: ${error.message}`);
      });
      let done = false;
      const finish = (error?: Error) => {
        if (done) return;
        done = true;
        client.end();
        handlers.onClose(error);
      };
      stream.on("data", (chunk: Buffer) => handlers.onData(chunk));
      stream.stderr.on("data", (chunk: Buffer) => handlers.onData(chunk));
      // "exit" comes before "close" when the shell itself ended; a close without it means the
      // connection went away (reboot, network), which the terminal answers with reconnects.
      let exited = false;
      stream.on("exit", () => (exited = true));
      stream.on("close", () => finish(exited ? undefined : new Error(`${endpoint.name}: connection lost`)));
      client.on("error", (error) => finish(new Error(`${endpoint.name}: ${error.message}`)));
      client.on("close", () => finish(new Error(`${endpoint.name}: connection closed`)));
      return {
        write: (data, input) => {
          if (input) {
            if (input.seq <= (typed.get(input.writer) ?? 0)) return handlers.onInputAck?.(input.writer, typed.get(input.writer)!);
            typed.delete(input.writer);
            typed.set(input.writer, input.seq);
            if (typed.size > MAX_TYPED_WRITERS) typed.delete(typed.keys().next().value!);
          }
          stream.write(data);
          if (input) handlers.onInputAck?.(input.writer, input.seq);
        },
        resize: ({ cols, rows }) => stream.setWindow(rows, cols, 0, 0),
        pause: () => stream.pause(),
        resume: () => stream.resume(),
        close: () => finish(),
      };
    },
  };
}
