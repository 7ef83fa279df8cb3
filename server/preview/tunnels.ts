/**
 * TCP streams to a port on a lab machine, over SSH direct-tcpip (ssh2 `forwardOut`): nothing of
 * the machine is exposed on Labdeck's host, and the machine is reached however its SSH endpoint
 * is (QEMU's loopback forward, a static host, a netns host). One SSH connection per machine,
 * shared by every preview request to it (each request is its own channel), closed when idle.
 * The stream goes to 127.0.0.1:<port> *on that machine*: `http://node02:30080/` opens node02's
 * own view of its port 30080 (a NodePort answers on every node).
 */
import type { Duplex } from "node:stream";
import type { Client } from "ssh2";
import { connectSsh, type SshEndpoint } from "../ssh/connect";

/** A machine's SSH connection is closed after this long without an open preview stream. */
export const TUNNEL_IDLE_CLOSE_MS = 60_000;
/** How long opening one stream (connect, login, channel open) may take before the request gets 504. */
export const TUNNEL_OPEN_TIMEOUT_MS = 15_000;
/** Streams open at once over one machine's connection (sshd's MaxSessions does not count direct-tcpip, but memory does). */
export const MAX_STREAMS_PER_MACHINE = 256;

/** Why a stream could not be opened, for the page the browser gets (never a secret). */
export class TunnelError extends Error {
  constructor(
    readonly kind: "refused" | "unreachable" | "timeout" | "busy",
    message: string,
  ) {
    super(message);
  }
}

interface Connection {
  client: Promise<Client>;
  streams: number;
  idle: NodeJS.Timeout | null;
}

export class TunnelPool {
  private readonly connections = new Map<string, Connection>();

  /** A stream to 127.0.0.1:`port` on the machine; rejects with TunnelError. */
  async open(endpoint: SshEndpoint, port: number): Promise<Duplex> {
    const key = `${endpoint.user}@${endpoint.host}:${endpoint.port}#${endpoint.hostKey}`;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new TunnelError("timeout", `${endpoint.name}:${port} did not answer within ${TUNNEL_OPEN_TIMEOUT_MS / 1000} s`)),
        TUNNEL_OPEN_TIMEOUT_MS,
      );
    });
    try {
      return await Promise.race([this.openOn(key, endpoint, port, true), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async openOn(key: string, endpoint: SshEndpoint, port: number, retry: boolean): Promise<Duplex> {
    const reused = this.connections.has(key);
    const conn = this.connection(key, endpoint);
    if (conn.streams >= MAX_STREAMS_PER_MACHINE) throw new TunnelError("busy", `${endpoint.name}: too many preview connections at once`);
    let client: Client;
    try {
      client = await conn.client;
    } catch (error) {
      throw new TunnelError("unreachable", (error as Error).message);
    }
    conn.streams++;
    if (conn.idle) clearTimeout(conn.idle);
    conn.idle = null;
    try {
      const stream = await new Promise<Duplex>((resolve, reject) =>
        client.forwardOut("127.0.0.1", 0, "127.0.0.1", port, (error, channel) => (error ? reject(error) : resolve(channel))),
      );
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        this.release(key, conn);
      };
      stream.once("close", release);
      stream.once("error", release);
      return stream;
    } catch (error) {
      this.release(key, conn);
      const message = (error as Error).message;
      // sshd's answer for a port nothing listens on ("Connection refused"), or forwarding switched off.
      if (/refused|connect failed/i.test(message)) throw new TunnelError("refused", `nothing answers on ${endpoint.name}:${port}`);
      if (/prohibited/i.test(message)) throw new TunnelError("refused", `${endpoint.name}: its sshd does not allow TCP forwarding`);
      // A pooled connection that died without telling (a rebooted VM behind NAT): once more, fresh.
      if (reused && retry) {
        this.drop(key, conn);
        return this.openOn(key, endpoint, port, false);
      }
      throw new TunnelError("unreachable", `${endpoint.name}: ${message}`);
    }
  }

  private connection(key: string, endpoint: SshEndpoint): Connection {
    const existing = this.connections.get(key);
    if (existing) return existing;
    const conn: Connection = { client: connectSsh(endpoint), streams: 0, idle: null };
    this.connections.set(key, conn);
    conn.client.then(
      (client) => {
        client.on("error", () => this.drop(key, conn));
        client.on("close", () => this.drop(key, conn));
      },
      () => this.drop(key, conn),
    );
    return conn;
  }

  private release(key: string, conn: Connection): void {
    conn.streams = Math.max(0, conn.streams - 1);
    if (conn.streams > 0 || this.connections.get(key) !== conn) return;
    conn.idle = setTimeout(() => this.drop(key, conn), TUNNEL_IDLE_CLOSE_MS);
    conn.idle.unref();
  }

  private drop(key: string, conn: Connection): void {
    if (conn.idle) clearTimeout(conn.idle);
    conn.idle = null;
    if (this.connections.get(key) === conn) this.connections.delete(key);
    void conn.client.then(
      (c) => c.end(),
      () => undefined,
    );
  }

  /** Machines with an open connection (tests, metrics). */
  get size(): number {
    return this.connections.size;
  }

  closeAll(): void {
    for (const [key, conn] of [...this.connections]) this.drop(key, conn);
  }
}
