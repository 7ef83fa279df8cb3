/**
 * The live terminals of this process, one per (lab session, machine), created on first attach
 * and kept while the lab session lives so that shells outlive their WebSockets. The shells
 * themselves live in each machine's terminal holder (holder/connector.ts) and outlive this
 * process too; a machine without a holder gets the direct PTY.
 */
import type { MachineState, SessionOverReason } from "./protocol";
import { TerminalSession } from "./session";
import { holderConnector, holderTerminalId } from "./holder/connector";
import type { SshEndpoint } from "./ssh";
import type { RecordingTap } from "../recordings/recorder";

/** Finds a machine's SSH endpoint; null when the session or machine does not exist or has ended. */
export type EndpointLookup = (sessionId: string, machine: string) => Promise<SshEndpoint | null>;

export class TerminalRegistry {
  private readonly terminals = new Map<string, Promise<TerminalSession | null>>();

  constructor(
    private readonly lookup: EndpointLookup,
    private readonly onEvent?: (event: { sessionId: string; machine: string; state: MachineState; message?: string }) => void,
    /** Whether a machine that does not answer is powered off (its provider knows). */
    private readonly isPoweredOff?: (sessionId: string, machine: string) => Promise<boolean>,
    /** Where each terminal's output is recorded (server/recordings/recorder.ts); unset: not recorded. */
    private readonly recorder?: { tap(sessionId: string, machine: string): RecordingTap },
  ) {}

  /** The terminal for a machine, created on first use; null when there is no such machine. */
  get(sessionId: string, machine: string): Promise<TerminalSession | null> {
    const key = `${sessionId}/${machine}`;
    let entry = this.terminals.get(key);
    if (!entry) {
      entry = this.lookup(sessionId, machine).then((endpoint) =>
        endpoint
          ? new TerminalSession(holderConnector(endpoint, holderTerminalId(sessionId), { recording: this.recorder?.tap(sessionId, machine) }), {
              onEvent: (e) => this.onEvent?.({ sessionId, ...e }),
              isPoweredOff: this.isPoweredOff && (() => this.isPoweredOff!(sessionId, machine)),
            })
          : null,
      );
      // A failed or empty lookup is not cached: the machine may exist on the next attempt.
      entry.then(
        (t) => t ?? this.terminals.delete(key),
        () => this.terminals.delete(key),
      );
      this.terminals.set(key, entry);
    }
    return entry;
  }

  /** Closes every terminal of a lab session (suspended or ended); viewers are told why. */
  async closeSession(sessionId: string, reason?: SessionOverReason): Promise<void> {
    for (const [key, entry] of this.terminals) {
      if (!key.startsWith(`${sessionId}/`)) continue;
      this.terminals.delete(key);
      (await entry.catch(() => null))?.close(reason);
    }
  }

  async closeAll(): Promise<void> {
    const entries = [...this.terminals.values()];
    this.terminals.clear();
    for (const entry of entries) (await entry.catch(() => null))?.close();
  }

  get size(): number {
    return this.terminals.size;
  }
}
