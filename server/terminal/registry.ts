/**
 * The live terminals of this process, one per (lab session, machine, shell number: tabs.ts),
 * created on first attach and kept while the lab session lives so that shells outlive their
 * WebSockets. The shells themselves live in each machine's terminal holder (holder-connector.ts)
 * and outlive this process too; a machine without a holder gets the direct PTY.
 */
import type { MachineState, SessionOverReason } from "./protocol";
import { Terminal } from "./terminal";
import { hangUpHolderTerminal, HolderConnector, holderTerminalId } from "./holder-connector";
import { holderTabName, terminalName } from "./tab-names";
import type { SshEndpoint } from "../ssh/connect";
import type { SshExecPool } from "../ssh/exec";
import type { RecordingTap } from "./recording-tap";
import type { EpochStore } from "./epochs";

/**
 * Finds a terminal's SSH endpoint (its machine's); null when the session, the machine or the
 * extra tab (`number` > 1, tabs.ts) does not exist or has ended.
 */
export type EndpointLookup = (sessionId: string, machine: string, number: number) => Promise<SshEndpoint | null>;

/** Longest a shutdown waits for the terminals' last epoch writes (epochs.ts), ms. */
const EPOCH_WRITES_WAIT_MS = 2_000;

export class TerminalRegistry {
  private readonly terminals = new Map<string, Promise<Terminal | null>>();
  /** The epoch stores handed to this process's connectors, by the same key. */
  private readonly epochStores = new Map<string, EpochStore>();

  constructor(
    private readonly lookup: EndpointLookup,
    private readonly onEvent?: (event: { sessionId: string; machine: string; state: MachineState; message?: string }) => void,
    /** Whether a machine that does not answer is powered off (its provider knows). */
    private readonly isPoweredOff?: (sessionId: string, machine: string) => Promise<boolean>,
    /** Where each terminal's output is recorded (server/recordings/recorder.ts); unset: not recorded. */
    private readonly recorder?: { tap(sessionId: string, machine: string): RecordingTap },
    /**
     * Where each terminal's holder logs start in viewers' offsets, shared by every process
     * (epochs.ts), by the terminal's name (`node01`, `node01#2`: tab-names.ts); unset: this
     * process alone. Not by the holder terminal id: that is the same on every machine of a session.
     */
    private readonly epochs?: (sessionId: string, terminal: string) => EpochStore,
    /** Logins other parts left for a machine's terminal (a restore's fix-up: SshExecPool.handOff). */
    private readonly connections?: Pick<SshExecPool, "take">,
  ) {}

  /** Terminal `number` (1: the first shell, tabs.ts) of a machine, created on first use; null when there is no such terminal. */
  get(sessionId: string, machine: string, number = 1): Promise<Terminal | null> {
    const name = terminalName(machine, number);
    const key = `${sessionId}/${name}`;
    let entry = this.terminals.get(key);
    if (!entry) {
      const terminalId = holderTerminalId(sessionId, holderTabName(number));
      const epochs = this.epochs?.(sessionId, name);
      // Only the machine's first shell takes a handed-off login: one per restore.
      const takeConnection = number === 1 && this.connections ? (e: SshEndpoint) => this.connections!.take(e) : undefined;
      if (epochs) this.epochStores.set(key, epochs);
      entry = this.lookup(sessionId, machine, number).then((endpoint) =>
        endpoint
          ? new Terminal(
              new HolderConnector(endpoint, terminalId, { recording: this.recorder?.tap(sessionId, name), epochs, takeConnection }),
              {
                onEvent: (e) => this.onEvent?.({ sessionId, ...e }),
                isPoweredOff: this.isPoweredOff && (() => this.isPoweredOff!(sessionId, machine)),
              },
            )
          : null,
      );
      // A failed or empty lookup is not cached: the machine may exist on the next attempt.
      entry.then(
        (t) => t ?? this.forget(key),
        () => this.forget(key),
      );
      this.terminals.set(key, entry);
    }
    return entry;
  }

  /**
   * A closed tab (its row is closed already): this process's terminal of it ends, its viewers
   * told `tabClosed`, and its shell is hung up — through that terminal when it is connected,
   * else over a connection of its own to `endpoint`.
   */
  async closeTab(sessionId: string, machine: string, number: number, endpoint: SshEndpoint | null): Promise<void> {
    const key = `${sessionId}/${terminalName(machine, number)}`;
    const entry = this.terminals.get(key);
    this.forget(key);
    const terminal = await entry?.catch(() => null);
    const connected = terminal?.currentState === "connected";
    terminal?.close("tabClosed");
    if (!connected && endpoint) await hangUpHolderTerminal(endpoint, holderTerminalId(sessionId, holderTabName(number)));
  }

  /**
   * After a tab notice (another process closed a tab): ends this process's terminals of the
   * session's tabs that `isOpen` says are closed now (all sessions' when `sessionId` is null).
   */
  async dropClosedTabs(
    sessionId: string | null,
    isOpen: (sessionId: string, machine: string, number: number) => Promise<boolean>,
  ): Promise<void> {
    for (const [key, entry] of [...this.terminals]) {
      const match = /^([^/]+)\/(.+)#([0-9]+)$/.exec(key);
      if (!match || (sessionId !== null && match[1] !== sessionId)) continue;
      const [, sid, machine, n] = match;
      if (await isOpen(sid!, machine!, Number(n)).catch(() => true)) continue;
      if (this.terminals.get(key) !== entry) continue;
      this.forget(key);
      (await entry.catch(() => null))?.close("tabClosed");
    }
  }

  /** Logs in to each machine's first shell ahead of the page (a lab session just became ready). */
  async prewarm(sessionId: string, machines: readonly string[]): Promise<void> {
    await Promise.all(machines.map(async (machine) => (await this.get(sessionId, machine).catch(() => null))?.prewarm()));
  }

  /** Re-attaches a machine's terminals of this process (its first shell and extra tabs) at once (the machine was restored to a saved state). */
  async reconnectMachine(sessionId: string, machine: string): Promise<void> {
    for (const terminal of await this.ofMachine(sessionId, machine)) terminal.reconnectNow();
  }

  /** A machine's reset began: its terminals wait for it (Terminal.hold) and reconnect once after. */
  async holdMachine(sessionId: string, machine: string): Promise<void> {
    for (const terminal of await this.ofMachine(sessionId, machine)) terminal.hold();
  }

  private async ofMachine(sessionId: string, machine: string): Promise<Terminal[]> {
    const found: Terminal[] = [];
    for (const [key, entry] of this.terminals) {
      if (key !== `${sessionId}/${machine}` && !key.startsWith(`${sessionId}/${machine}#`)) continue;
      const terminal = await entry.catch(() => null);
      if (terminal) found.push(terminal);
    }
    return found;
  }

  /** Closes every terminal of a lab session (suspended or ended); viewers are told why. */
  async closeSession(sessionId: string, reason?: SessionOverReason): Promise<void> {
    for (const [key, entry] of this.terminals) {
      if (!key.startsWith(`${sessionId}/`)) continue;
      this.forget(key);
      (await entry.catch(() => null))?.close(reason);
    }
  }

  async closeAll(): Promise<void> {
    const entries = [...this.terminals.values()];
    this.terminals.clear();
    for (const entry of entries) (await entry.catch(() => null))?.close();
    // Each closed terminal wrote where it left its log; the database may go right after.
    const stores = [...this.epochStores.values()];
    this.epochStores.clear();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(stores.map((s) => s.settled())), new Promise((r) => (timer = setTimeout(r, EPOCH_WRITES_WAIT_MS)))]);
    clearTimeout(timer);
  }

  private forget(key: string): void {
    this.terminals.delete(key);
    this.epochStores.delete(key);
  }

  get size(): number {
    return this.terminals.size;
  }
}
