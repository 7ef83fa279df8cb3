/** Free TCP ports on loopback for the VMs' SSH forwards. */
import net from "node:net";

/** How long a port handed out stays off-limits to later calls in this process, ms: the VM that got it binds it within a second or two. */
const RECENT_PORT_HOLD_MS = 60_000;
const recent = new Map<number, number>();

/**
 * A loopback port nothing listens on right now (the kernel's pick for port 0), not handed out by
 * this process in the last minute. Another process may still take it before QEMU binds it;
 * QEMU then exits with a hostfwd error and the caller retries with a new port.
 */
export async function freeLoopbackPort(): Promise<number> {
  const now = Date.now();
  for (const [port, at] of recent) if (now - at > RECENT_PORT_HOLD_MS) recent.delete(port);
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = net.createServer();
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => {
        const address = server.address();
        server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
      });
    });
    if (recent.has(port)) continue;
    recent.set(port, now);
    return port;
  }
}
