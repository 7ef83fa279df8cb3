/**
 * The platform's SSH client: connects to a machine with ssh2, key authentication and a pinned
 * host key (a machine whose host key differs is refused before authentication), and reads every
 * connection within the process's read budget. Terminals, checks, setup, previews and the
 * machine providers all connect through here.
 */
import net from "node:net";
import { Client, type ConnectConfig } from "ssh2";
import { readBudget, type ReadBudget } from "./read-budget";

/** Error from a connection that says the machine presented the wrong host key. */
export class HostKeyMismatchError extends Error {
  readonly hostKeyMismatch = true;
}

export interface SshEndpoint {
  /** Machine name in the lab, for messages. */
  name: string;
  host: string;
  port: number;
  user: string;
  /** OpenSSH private key text. */
  privateKey: string;
  /** Pinned host public key, OpenSSH one-line format ("ssh-ed25519 AAAA..."). */
  hostKey: string;
}

/**
 * How long the machine may take to start answering (TCP connect and sshd's banner) before it
 * counts as unreachable. A VM that is down or still booting behind QEMU's NAT never answers: the
 * NAT accepts the TCP connection and holds it.
 */
export const SSH_READY_TIMEOUT_MS = 15_000;
/**
 * After the banner, how long key exchange and login may take, ms. A machine that answered is up,
 * only slow: a TCG guest just after boot, on a loaded host, took 15-25 s for a login (measured
 * in the VM e2e: every 15 s attempt failed for 100 s after sshd was up, then one got through).
 */
export const SSH_LOGIN_AFTER_BANNER_MS = 60_000;
/** Keepalive: a dead machine is noticed after interval x count (30 s). */
export const SSH_KEEPALIVE_INTERVAL_MS = 10_000;
export const SSH_KEEPALIVE_COUNT_MAX = 3;

/** Decodes the key blob of an OpenSSH one-line public key; throws on anything else. */
export function hostKeyBlob(openSshPublicKey: string): Buffer {
  const blob = openSshPublicKey.trim().split(/\s+/)[1];
  if (!blob || !/^[A-Za-z0-9+/]+=*$/.test(blob)) {
    throw new Error("pinned host key is not an OpenSSH public key line");
  }
  return Buffer.from(blob, "base64");
}

/** Connects and authenticates; rejects with HostKeyMismatchError when the host key is not the pinned one. */
export function connectSsh(endpoint: SshEndpoint, readyTimeoutMs = SSH_READY_TIMEOUT_MS): Promise<Client> {
  const pinned = hostKeyBlob(endpoint.hostKey);
  return new Promise((resolve, reject) => {
    const client = new Client();
    let mismatch = false;
    // Our own socket, to see the server's first bytes: until then `readyTimeoutMs` applies, after
    // them SSH_LOGIN_AFTER_BANNER_MS (ssh2's single ready timeout is off; the timer below rules).
    const sock = net.connect({ host: endpoint.host, port: endpoint.port });
    sock.once("data", () => {
      clearTimeout(timer);
      timer = setTimeout(
        () => fail(new Error(`sshd answered but no login within ${SSH_LOGIN_AFTER_BANNER_MS} ms`)),
        SSH_LOGIN_AFTER_BANNER_MS,
      );
    });
    const config: ConnectConfig = {
      sock,
      username: endpoint.user,
      privateKey: endpoint.privateKey,
      readyTimeout: 0,
      keepaliveInterval: SSH_KEEPALIVE_INTERVAL_MS,
      keepaliveCountMax: SSH_KEEPALIVE_COUNT_MAX,
      hostVerifier: (key: Buffer) => {
        mismatch = !key.equals(pinned);
        return !mismatch;
      },
    };
    let settled = false;
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      client.end();
      sock.destroy();
      reject(
        mismatch
          ? new HostKeyMismatchError(`${endpoint.name}: host key does not match the pinned key; connection refused`)
          : new Error(`${endpoint.name}: ${error.message}`),
      );
    };
    // ssh2 may emit "error" more than once (e.g. a late "Connection lost before handshake" after
    // a handshake timeout while a VM reboots) and may close without any error during
    // authentication: this listener stays for the client's life, so no error is ever unhandled,
    // and a close or the overall timer settles the promise.
    client.on("error", fail);
    client.once("close", () => fail(new Error("connection closed during the SSH handshake")));
    let timer = setTimeout(() => fail(new Error(`no SSH banner within ${readyTimeoutMs} ms`)), readyTimeoutMs);
    client.once("ready", () => {
      if (settled) return void client.end();
      settled = true;
      clearTimeout(timer);
      client.setNoDelay(true); // keystrokes go out at once, not after Nagle's delay
      readFairly(sock);
      resolve(client);
    });
    client.connect(config);
  });
}

/**
 * Reads a connection within the process's read budget (read-budget.ts): libuv reads a readable
 * socket up to 32 times (64 KiB each) before it looks at the next one, and each read is decrypted
 * and relayed at once, so a keystroke's echo arriving on one connection waited behind megabytes of
 * other terminals' floods.
 */
export function readFairly(sock: net.Socket, budget: ReadBudget = readBudget): void {
  const reader = budget.reader(
    () => sock.pause(),
    () => {
      if (!sock.destroyed) sock.resume();
    },
  );
  sock.on("data", (chunk: Buffer) => void reader.took(chunk.byteLength));
}
