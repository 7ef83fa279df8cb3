/**
 * One terminal gateway as its own process, for tests that kill a server process (kill -9) or run
 * two on one database: the production TerminalRegistry (holder connector) and gateway over the
 * database in DATABASE_URL, on 127.0.0.1:PORT. Sockets are authorized by their signed token
 * alone (the sign-in cookie check is faked at the far edge, as in stack.ts's default).
 * Prints `GATEWAY LISTENING <port>` once it accepts sockets.
 *   DATABASE_URL=... LABDECK_TEST_SECRET=<hex> PORT=<n> node --import tsx server/testing/gateway-process.ts
 */
import fs from "node:fs";
import http from "node:http";
import { monitorEventLoopDelay } from "node:perf_hooks";
import type net from "node:net";
import { createDb } from "../db/client";
import { log } from "../log";
import { terminalEndpoint } from "../sessions/tabs";
import { configureMachineKeys } from "../machines/sealed-keys";
import { TerminalRegistry } from "../terminal/registry";
import { dbEpochStore } from "../terminal/epochs";
import { terminalUpgrade } from "../http/terminal-upgrade";

const url = process.env.DATABASE_URL;
const secretHex = process.env.LABDECK_TEST_SECRET;
const port = Number(process.env.PORT ?? "0");
if (!url || !secretHex || !Number.isInteger(port)) {
  process.stderr.write("gateway-process: DATABASE_URL, LABDECK_TEST_SECRET (hex) and PORT are required\n");
  process.exit(2);
}
const secret = Buffer.from(secretHex, "hex");
configureMachineKeys(secret);
const db = createDb(url);
const terminals = new TerminalRegistry(
  (sid, machine, number) => terminalEndpoint(db, sid, machine, number),
  undefined,
  undefined,
  undefined,
  (sid, terminal) => dbEpochStore(db, sid, terminal),
);
const gateway = terminalUpgrade({ secret, terminals, log, authorize: async () => null });
const server = http.createServer((_req, res) => res.writeHead(404).end());
server.on("upgrade", (req, socket, head) => {
  if (!gateway.handle(req, socket, head)) socket.destroy();
});
server.listen(port, "127.0.0.1", () => {
  process.stdout.write(`GATEWAY LISTENING ${(server.address() as net.AddressInfo).port}\n`);
});
const stop = () => {
  gateway.closeAll();
  void terminals.closeAll().finally(() => process.exit(0));
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);

// Diagnostics for benches: LABDECK_LOOP_DELAY_FILE=<path> appends the event loop's delay (p50, p99,
// max in ms) every 5 s.
const delayFile = process.env.LABDECK_LOOP_DELAY_FILE;
if (delayFile) {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  setInterval(() => {
    const ms = (n: number) => (n / 1e6).toFixed(1);
    fs.appendFileSync(
      delayFile,
      `${new Date().toISOString()} loop delay p50 ${ms(delay.percentile(50))} p99 ${ms(delay.percentile(99))} max ${ms(delay.max)}\n`,
    );
    delay.reset();
  }, 5_000).unref();
}
