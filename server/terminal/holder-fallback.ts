/**
 * The direct shell a terminal takes when its machine's holder is unreachable or misbehaving
 * (holder-health.ts), with the line saying that the shell ends with this server. While on it, the
 * terminal looks at the holder now and then with a read-only OPEN, and goes back only when that
 * link stays healthy for HOLDER_HEALTHY_MS: a holder that answers HELLO and then loops or sends
 * junk is not taken back.
 */
import { connectSsh, type SshEndpoint } from "../ssh/connect";
import { HolderTerminal, connectHolder } from "../holder/client";
import type { PtyChannel, PtyConnector, PtyHandlers, PtySize } from "./pty";
import { HOLDER_HEALTHY_MS, answered, type HolderFailureReason } from "./holder-health";
import { log } from "../log";

export interface DirectShellOptions {
  endpoint: SshEndpoint;
  terminalId: string;
  /** Opens the direct shell (ssh-pty.ts). */
  fallback: PtyConnector;
  /** How often to look at the holder again, ms. */
  probeMs: number;
  /** Why the holder is not used (logged once, here) and what it said. */
  reason: HolderFailureReason;
  detail: string;
  /** A probe found the holder healthy: called before the direct shell closes (the terminal then opens on the holder). */
  onHolderBack: () => void;
}

/** Opens the direct shell, shows the fallback notice, and probes the holder every `probeMs`. */
export async function openDirectShell(o: DirectShellOptions, size: PtySize | undefined, handlers: PtyHandlers): Promise<PtyChannel> {
  const who = { machine: o.endpoint.name, terminal: o.terminalId };
  log.warn({ ...who, reason: o.reason, why: o.detail }, `terminal holder not used (${o.reason}); a direct shell instead`);
  const channel = await o.fallback.open(size, handlers);
  handlers.onNotice?.("fallback");
  let probing = false;
  const probe = setInterval(() => {
    if (probing) return;
    probing = true;
    void probeHolder(o.endpoint, o.terminalId)
      .then((back) => {
        if (!back) return;
        clearInterval(probe);
        log.info(who, "terminal holder answers again and stayed healthy; leaving the direct shell");
        o.onHolderBack();
        handlers.onNotice?.("holderBack");
        channel.close();
      })
      .finally(() => (probing = false));
  }, o.probeMs);
  probe.unref();
  return {
    ...channel,
    close: (endShell) => {
      clearInterval(probe);
      channel.close(endShell);
    },
  };
}

/**
 * Whether the machine's holder works now: HELLO, then a read-only OPEN of the terminal (it
 * starts no shell) answered by a valid OPENED, and the link still fine after `healthyMs` (no
 * GONE, ERROR, bad frame or close). One connection, closed again.
 */
export async function probeHolder(endpoint: SshEndpoint, terminalId: string, healthyMs = HOLDER_HEALTHY_MS): Promise<boolean> {
  let client: Awaited<ReturnType<typeof connectSsh>> | undefined;
  try {
    client = await connectSsh(endpoint);
    const link = await connectHolder(client);
    try {
      let bad = false;
      link.on("close", () => (bad = true));
      link.on("gone", () => (bad = true));
      link.on("holderError", () => (bad = true));
      const reader = new HolderTerminal(terminalId, { onOutput: () => undefined }, { mode: "read", from: -1 });
      await answered(reader.attach(link), "the probe's OPEN");
      await new Promise((resolve) => setTimeout(resolve, healthyMs));
      return !bad && !link.isClosed;
    } finally {
      link.close();
    }
  } catch {
    return false;
  } finally {
    client?.end();
  }
}
