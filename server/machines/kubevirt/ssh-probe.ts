/**
 * Whether a KubeVirt machine answers SSH with the host key Labdeck pinned, without logging in.
 */
import { Client } from "ssh2";
import { hostKeyBlob } from "../../ssh/connect";
import type { ProvisionedMachine } from "../provider";

/** One SSH probe's limit while waiting for a VM, ms (a booting guest's Service refuses or times out). */
const SSH_PROBE_TIMEOUT_MS = 10_000;
/** Pause between SSH probes and between polls of an object's deletion, ms. */
export const RETRY_PAUSE_MS = 500;

/**
 * Waits until each machine's sshd presents the host key Labdeck pinned (so cloud-init has run
 * and sshd is up). No login: the machines handed to reboot, reset and resume come from the
 * database, whose private keys are sealed (machines/sealed-keys.ts), and the provider keeps no
 * copy; the lab's setup and the terminals log in right after.
 */
export async function waitForSsh(
  endpoints: readonly Pick<ProvisionedMachine, "name" | "host" | "port" | "hostKey">[],
  deadline: number,
): Promise<void> {
  await Promise.all(
    endpoints.map(async (endpoint) => {
      let last = "no attempt";
      while (Date.now() < deadline) {
        try {
          await presentsHostKey(endpoint, Math.min(SSH_PROBE_TIMEOUT_MS, Math.max(1, deadline - Date.now())));
          return;
        } catch (error) {
          last = (error as Error).message;
        }
        await sleep(RETRY_PAUSE_MS);
      }
      throw new Error(
        `${endpoint.name}: SSH at ${endpoint.host}:${endpoint.port} did not answer with the pinned host key in time (last: ${last})`,
      );
    }),
  );
}

/**
 * One SSH handshake up to the host key: resolves when the server presents `hostKey`, rejects when
 * it presents another, does not answer in time or closes. The handshake is abandoned there (the
 * verifier refuses), so nothing logs in.
 */
export function presentsHostKey(endpoint: Pick<ProvisionedMachine, "host" | "port" | "hostKey">, timeoutMs: number): Promise<void> {
  const pinned = hostKeyBlob(endpoint.hostKey);
  return new Promise((resolve, reject) => {
    const client = new Client();
    let verdict: "pinned" | "other" | null = null;
    let settled = false;
    const finish = (error?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      client.end();
      if (verdict === "pinned") resolve();
      else
        reject(
          verdict === "other"
            ? new Error("the server presents another host key than the pinned one")
            : (error ?? new Error("closed before a host key")),
        );
    };
    const timer = setTimeout(() => finish(new Error(`no SSH host key within ${timeoutMs} ms`)), timeoutMs);
    client.on("error", (error) => finish(error));
    client.on("close", () => finish());
    client.connect({
      host: endpoint.host,
      port: endpoint.port,
      username: "root",
      readyTimeout: timeoutMs,
      hostVerifier: (key: Buffer) => {
        verdict = key.equals(pinned) ? "pinned" : "other";
        setImmediate(() => finish());
        return false;
      },
    });
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
