/**
 * A PtyConnector (pty.ts) whose shells live in the machine's terminal holder: the gateway
 * attaches to them instead of owning them, so a server restart, a dropped network or a restarted
 * sshd leave the shell running and the next `open()` (this process or another) resumes it. A
 * machine without a usable holder gets the direct PTY (ssh-pty.ts) and a visible line saying so.
 */
import { createHash } from "node:crypto";
import type { PtyChannel, PtyConnector, PtyHandlers, PtySize } from "./pty";
import { connectSsh, type SshEndpoint } from "../ssh/connect";
import { sshConnector } from "./ssh-pty";
import { HolderGoneError, HolderTerminal, connectHolder, type HolderHello, type HolderLink, type HolderOpened } from "../holder/client";
import { HOLDER_MAX_INT, HolderMisbehaviourError, isHolderMisbehaviour } from "../holder/misbehaviour";
import {
  HOLDER_HEALTHY_MS,
  HOLDER_OPENS_PER_WINDOW,
  HolderHealth,
  answered,
  holderFailureReason,
  type HolderFailureReason,
} from "./holder-health";
import { openDirectShell } from "./holder-fallback";
import type { Client } from "ssh2";
import type { RecordingTap } from "./recording-tap";
import type { TerminalNotice } from "./protocol";
import { newEpochStartOffset, type EpochStore } from "./epochs";
import { log } from "../log";

/**
 * Output a process reads first when it attaches to a terminal it has not seen and no viewer
 * names an offset (bytes): the headless screen (screen.ts) is rebuilt from it for snapshots.
 */
export const ATTACH_TAIL_BYTES = 256 * 1024;
/** Longest a (re)connect waits for the shared epochs (epochs.ts) before numbering the log in this process, ms. */
export const EPOCH_DB_TIMEOUT_MS = 5_000;
/** Longest a recording catch-up may read the holder's log for, ms; then the rest stays a gap. */
export const CATCH_UP_TIMEOUT_MS = 60_000;
/**
 * Waits between tries to reach a machine's holder before a terminal falls back to a direct shell,
 * ms (7.5 s in all): a machine just restored from a saved state, booted or upgrading its holder
 * answers SSH a moment before its holder does, and a direct shell is lost at the next restart.
 */
export const HOLDER_RETRY_MS = [500, 1_000, 2_000, 4_000];
/** How often a terminal on the direct shell asks whether the machine's holder answers again, ms. */
export const HOLDER_PROBE_MS = 15_000;

/** The holder's terminal id for a lab session's shell on a machine (a machine may serve several sessions). */
export function holderTerminalId(sessionId: string, tab = "main"): string {
  return `${createHash("sha256").update(sessionId).digest("hex").slice(0, 20)}-${tab}`.slice(0, 32);
}

export interface HolderConnectorOptions {
  /** The shell for a machine without a usable holder; default: the direct PTY (ssh-pty.ts) to the same endpoint. */
  fallback?: PtyConnector;
  /**
   * Receives every byte read from the holder with its log offset, and every size this process
   * gives the terminal (server/recordings/recorder.ts); the direct-PTY fallback is not recorded.
   */
  recording?: RecordingTap;
  /**
   * Shares where each holder log starts in viewers' offsets with the other processes (epochs.ts);
   * without it this process numbers them alone, as if no other process ran.
   */
  epochs?: EpochStore;
  /** Waits between tries to reach the holder before the direct shell, ms; default HOLDER_RETRY_MS. */
  holderRetryMs?: readonly number[];
  /** How often a direct shell asks whether the holder answers again, ms; default HOLDER_PROBE_MS. */
  holderProbeMs?: number;
  /** A login to the machine another part left for its terminal (SshExecPool.handOff), tried before a new one. */
  takeConnection?: (endpoint: SshEndpoint) => Promise<Client> | undefined;
}

/**
 * Opens terminal `terminalId`'s shell in the holder of one machine, over an SSH connection per
 * open; the HolderTerminal (where to read next, input not yet acknowledged) carries over from one
 * open to the next.
 */
export class HolderConnector implements PtyConnector {
  readonly machine: string;
  private readonly fallback: PtyConnector;
  private readonly term: HolderTerminal;
  /** The open channel's handlers: where output goes. */
  private active: PtyHandlers | null = null;
  /** The holder log epoch read last: its boot id and holder instance. */
  private bootId: string | undefined;
  private instance: string | undefined;
  // Viewers' offsets keep rising across a reboot or a holder restart (a new holder's log starts
  // at 0 again): each log (epoch) starts at a start offset, recorded for every process (epochs.ts).
  private startOffset = 0;
  /** The log offset right after the last byte read from the current epoch's log. */
  private endLogOffset = 0;
  /** What the open channel does when the shell exits, and when the bytes it asked for are gone. */
  private onExit: (() => void) | null = null;
  private onGone: (() => void) | null = null;
  /** What the open channel does when the holder misbehaves outside a frame (an offset past 2^53-1). */
  private onBroken: ((error: Error) => void) | null = null;
  /** OPENs sent and failures in a row of this terminal's holder. */
  private readonly health = new HolderHealth();
  /** What the last holder failure said (for the log line at the fallback). */
  private lastFailure = "";
  /** When the current link's last OPENED came (0: none on it yet), ms. */
  private openedAt = 0;
  /** Output came after that OPENED (a reader that fell behind had some; a holder looping on OPENED and GONE has none). */
  private readSinceOpened = false;

  constructor(
    private readonly endpoint: SshEndpoint,
    private readonly terminalId: string,
    private readonly options: HolderConnectorOptions = {},
  ) {
    this.machine = endpoint.name;
    this.fallback = options.fallback ?? sshConnector(endpoint);
    this.term = new HolderTerminal(
      terminalId,
      {
        onOutput: (logOffset, data) => this.output(logOffset, data),
        onOpened: () => {
          [this.openedAt, this.readSinceOpened] = [Date.now(), false];
        },
        onExit: () => this.onExit?.(),
        onGone: () => this.onGone?.(),
        onInputAck: (writer, seq) => this.active?.onInputAck?.(writer, seq),
      },
      { tail: ATTACH_TAIL_BYTES },
    );
  }

  /**
   * The shell on the holder; after a capped backoff through holder failures (holder-health.ts),
   * or when no holder answers, the direct shell with its notice (holder-fallback.ts).
   */
  async open(size: PtySize | undefined, handlers: PtyHandlers, offset?: number): Promise<PtyChannel> {
    for (;;) {
      if (this.health.givenUp)
        return this.openFallback(size, handlers, this.health.reason ?? "holder-misbehaving: protocol", this.lastFailure);
      const wait = this.health.backoffMs();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      let reached: Awaited<ReturnType<HolderConnector["reachHolder"]>>;
      try {
        reached = await this.reachHolder();
      } catch (error) {
        if (!isHolderMisbehaviour(error)) throw error; // the machine does not answer SSH: the terminal retries it
        this.failed(error);
        continue;
      }
      if (!("link" in reached)) return this.openFallback(size, handlers, holderFailureReason(reached.error), reached.error.message);
      const { client, link } = reached;
      try {
        const rebooted = await this.followEpoch(link.hello!, offset);
        // The recording first catches up on what no process read (live output waits for it).
        this.options.recording?.catchUp(this.epoch, (logOffset, sink) => readLog(client, this.terminalId, logOffset, sink));
        return await this.attach(client, link, size, handlers, rebooted);
      } catch (error) {
        if (!isHolderMisbehaviour(error)) throw error; // counted where the link failed (attach)
      }
    }
  }

  noticed(notice: TerminalNotice): void {
    this.options.recording?.notice(notice);
  }

  /** The current log epoch's name: "<bootId>/<instance>". */
  private get epoch(): string {
    return `${this.bootId}/${this.instance}`;
  }

  private output(logOffset: number, data: Buffer): void {
    // Viewers' offsets are the epoch's start plus the log's: past 2^53-1 no browser has them exactly.
    if (this.startOffset + logOffset + data.byteLength > HOLDER_MAX_INT)
      return this.onBroken?.(new HolderMisbehaviourError("out-of-range", `output at ${this.startOffset} + ${logOffset} ends past 2^53-1`));
    // The recording's log epoch: log offsets start at 0 again with a new boot *or* a new holder
    // instance (a holder restarted on the same boot); keyed by the boot alone, the recorder
    // took a restarted holder's output for bytes it already had and dropped it.
    if (this.bootId !== undefined) this.options.recording?.output(this.epoch, logOffset, data);
    this.endLogOffset = logOffset + data.byteLength;
    this.readSinceOpened = true;
    this.active?.onData(data, this.startOffset + logOffset);
  }

  /**
   * An SSH connection and a link to the machine's holder, tried again after each wait of
   * `holderRetryMs`; else the error of the last try. A machine that does not answer SSH throws, as
   * before (the terminal retries it), and so does a holder that misbehaves at HELLO (open() counts it).
   */
  private async reachHolder(): Promise<{ client: Client; link: HolderLink } | { error: Error }> {
    const waits = this.options.holderRetryMs ?? HOLDER_RETRY_MS;
    for (let attempt = 0; ; attempt++) {
      const handed = attempt === 0 ? await this.options.takeConnection?.(this.endpoint)?.catch(() => undefined) : undefined;
      const client = handed ?? (await connectSsh(this.endpoint));
      try {
        return { client, link: await connectHolder(client) };
      } catch (error) {
        client.end();
        const wait = waits[attempt];
        if (isHolderMisbehaviour(error)) throw error;
        if (wait === undefined) return { error: error as Error };
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  /** Counts a holder failure and keeps what it said for the log line at the fallback. */
  private failed(error: unknown): void {
    this.health.failed(error);
    this.lastFailure = (error as Error).message ?? String(error);
  }

  /** The direct shell, the last resort; it goes back to the holder once a probe finds it healthy. */
  private openFallback(size: PtySize | undefined, handlers: PtyHandlers, reason: HolderFailureReason, detail: string): Promise<PtyChannel> {
    return openDirectShell(
      {
        endpoint: this.endpoint,
        terminalId: this.terminalId,
        fallback: this.fallback,
        probeMs: this.options.holderProbeMs ?? HOLDER_PROBE_MS,
        reason,
        detail,
        onHolderBack: () => this.health.reset(),
      },
      size,
      handlers,
    );
  }

  /**
   * Follows the holder into the log epoch it serves now (`hello`), where to read from included;
   * `offset` is the resuming viewer's. Returns whether the machine rebooted since the epoch before.
   */
  private async followEpoch(hello: HolderHello, offset: number | undefined): Promise<boolean> {
    const seen = this.bootId === undefined ? undefined : this.epoch;
    const epoch = `${hello.bootId}/${hello.instance}`;
    if (epoch === seen) return false;
    const entered = await this.enterEpoch(epoch, seen, offset);
    const lastBoot = entered.lastBoot ?? this.bootId;
    const rebooted = lastBoot !== undefined && lastBoot !== hello.bootId;
    [this.bootId, this.instance, this.startOffset, this.endLogOffset] = [hello.bootId, hello.instance, entered.startOffset, 0];
    if (seen !== undefined)
      this.term.next = 0; // the fresh shell's log, from its first byte
    // This process's first read of the terminal: from where the resuming viewer stopped
    // (a viewer from before this epoch's start offset gets the tail and a snapshot).
    else if (this.term.next < 0 && offset !== undefined && offset > 0 && offset >= this.startOffset)
      this.term.next = offset - this.startOffset;
    return rebooted;
  }

  /**
   * Where log `epoch` starts for viewers (its start offset): recorded by the first process that
   * saw it, or chosen now (newEpochStartOffset) from the resuming viewer's `offset`. `lastBoot`: the
   * boot of the latest earlier epoch when this process saw none (a reboot while no process was
   * attached still shows its line).
   */
  private async enterEpoch(
    epoch: string,
    seen: string | undefined,
    offset: number | undefined,
  ): Promise<{ startOffset: number; lastBoot?: string }> {
    const previous = seen === undefined ? null : { startOffset: this.startOffset, endLogOffset: this.endLogOffset };
    // This process's own numbering: right after the log it read, or 0.
    const alone = { startOffset: previous ? previous.startOffset + previous.endLogOffset : 0 };
    const store = this.options.epochs;
    if (!store) return alone;
    let timer: NodeJS.Timeout | undefined;
    try {
      // A terminal never waits long on the database: a slow or absent one leaves it numbered here.
      const late = new Promise<never>(
        (_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${EPOCH_DB_TIMEOUT_MS} ms`)), EPOCH_DB_TIMEOUT_MS)),
      );
      return await Promise.race([this.sharedEpoch(store, epoch, seen, previous, offset), late]);
    } catch (error) {
      // The database is away: this process numbers the log alone (as before epochs were shared).
      log.warn(
        { err: (error as Error).message, terminal: this.terminalId },
        "terminal epochs unavailable; numbering this log in this process only",
      );
      return alone;
    } finally {
      clearTimeout(timer);
    }
  }

  /** enterEpoch with the shared epochs: records where this process left `seen`, then reads or claims `epoch`. */
  private async sharedEpoch(
    store: EpochStore,
    epoch: string,
    seen: string | undefined,
    previous: { startOffset: number; endLogOffset: number } | null,
    offset: number | undefined,
  ): Promise<{ startOffset: number; lastBoot?: string }> {
    if (seen !== undefined) await store.setEnd(seen, this.endLogOffset);
    const known = await store.load();
    const recorded = known.get(epoch);
    if (recorded) return { startOffset: recorded.startOffset };
    const latest = [...known.entries()].sort((a, b) => b[1].startOffset - a[1].startOffset)[0];
    const claimed = await store.claim(epoch, newEpochStartOffset(known, previous, offset));
    return { startOffset: claimed, lastBoot: previous ? undefined : latest?.[0].split("/")[0] };
  }

  /**
   * Attaches the holder terminal over `link` and returns the channel that hands `handlers` its
   * output, until the shell exits or the connection ends. A holder that misbehaves (a typed error
   * from the link, a GONE loop, a close before the link has worked) is counted in `health` and the
   * error thrown, or handed to onClose, is typed: open() then backs off or takes the direct shell.
   */
  private async attach(
    client: Client,
    link: HolderLink,
    size: PtySize | undefined,
    handlers: PtyHandlers,
    rebooted: boolean,
  ): Promise<PtyChannel> {
    const name = this.endpoint.name;
    let done = false;
    let failure: Error | undefined;
    let returned = false; // onClose only for a channel the terminal has been given
    let opening = true; // an OPEN is being answered: its GONE is handled where it was sent
    let sshClosed = false;
    const finish = (error?: Error) => {
      if (done) return;
      [done, failure] = [true, error];
      if (isHolderMisbehaviour(error)) this.failed(error);
      this.leave(handlers);
      endConnection(client, link);
      // The terminal logs why its shell went: a holder's misbehaviour by its reason code.
      if (returned)
        handlers.onClose(
          isHolderMisbehaviour(error) ? new Error(`${holderFailureReason(error)}: ${error.message}`, { cause: error }) : error,
        );
    };
    link.on("close", (error) => finish(error ?? this.linkClosed(name, sshClosed)));
    client.on("error", (error) => finish(new Error(`${name}: ${error.message}`)));
    client.on("close", () => {
      sshClosed = true;
      finish(new Error(`${name}: connection closed`));
    });
    if (rebooted) handlers.onNotice?.("rebooted");
    this.active = handlers;
    this.openedAt = 0;
    // The shell ended: a normal close; the terminal opens again, which starts a fresh shell.
    this.onExit = () => finish();
    this.onBroken = finish;
    // This reader fell behind the log (every viewer stopped reading while output flooded): go on
    // from the last ATTACH_TAIL_BYTES; the terminal rebuilds its screen from them and sends
    // viewers a snapshot. A GONE right after OPENED with no output between is a holder looping,
    // not a slow reader (any other loop ends at the OPEN cap).
    this.onGone = () => {
      if (opening && this.openedAt === 0) return; // the OPEN's own answer: openOn handles it
      if (!this.readSinceOpened && Date.now() - this.openedAt < HOLDER_HEALTHY_MS)
        return finish(new HolderMisbehaviourError("gone-loop", "GONE right after OPENED"));
      opening = true;
      this.term.next = -1;
      void this.openOn(link).then(() => (opening = false), finish);
    };
    // No writer's size yet: the OPEN leaves the shell's size as it is.
    if (size) {
      this.term.resize(size);
      this.options.recording?.resize(size.cols, size.rows);
    }
    try {
      await this.openOn(link).catch((error: unknown) => {
        if (!(error instanceof HolderGoneError)) throw error;
        // A resume asked for bytes no longer held: from the last ATTACH_TAIL_BYTES instead.
        this.term.next = -1;
        return this.openOn(link);
      });
    } catch (error) {
      finish(error as Error);
      throw error;
    }
    opening = false;
    if (done) throw failure ?? new Error(`${name}: connection lost`);
    returned = true;
    // A link that still works after HOLDER_HEALTHY_MS ends the failure streak.
    const healthy = setTimeout(() => {
      if (!done) this.health.healthy();
    }, HOLDER_HEALTHY_MS);
    healthy.unref();
    return this.channel(link, finish);
  }

  /** Why `link` closed with no error of its own: the holder hung up on a link that had not worked yet, or the connection went. */
  private linkClosed(name: string, sshClosed: boolean): Error {
    const worked = this.openedAt > 0 && Date.now() - this.openedAt >= HOLDER_HEALTHY_MS;
    if (sshClosed || worked) return new Error(`${name}: connection lost`);
    return new HolderMisbehaviourError(
      "closed-after-open",
      `the holder closed the link ${this.openedAt ? "right after OPENED" : "before OPENED"}`,
    );
  }

  /** Sends OPEN (within the holder's OPEN cap) and waits for OPENED; a GONE for an OPEN from the end is a loop. */
  private async openOn(link: HolderLink): Promise<HolderOpened> {
    if (!this.health.allowOpen()) throw new HolderMisbehaviourError("open-rate", `over ${HOLDER_OPENS_PER_WINDOW} OPENs a minute`);
    const fromEnd = this.term.next < 0;
    this.openedAt = 0;
    try {
      return await answered(this.term.attach(link), "OPEN");
    } catch (error) {
      if (error instanceof HolderGoneError && fromEnd)
        throw new HolderMisbehaviourError("gone-loop", `GONE for an OPEN from the end: ${error.message}`);
      throw error;
    }
  }

  /** The channel's side: stops handing output to `handlers` and records where this process leaves the log. */
  private leave(handlers: PtyHandlers): void {
    if (this.active === handlers) this.active = null;
    this.onExit = this.onGone = this.onBroken = null;
    if (this.bootId !== undefined) void this.options.epochs?.setEnd(this.epoch, this.endLogOffset).catch(() => undefined);
    this.term.detach();
  }

  private channel(link: HolderLink, finish: () => void): PtyChannel {
    return {
      write: (data, input) => void (input ? this.term.writeAs(input.writer, input.seq, data) : this.term.write(data)),
      resize: (next) => {
        this.term.resize(next);
        this.options.recording?.resize(next.cols, next.rows);
      },
      pause: () => link.pause(),
      resume: () => link.resume(),
      close: (endShell) => {
        if (endShell) this.term.kill();
        finish();
      },
    };
  }
}

/** Longest the SSH connection waits for the holder link to flush its last frames before it ends, ms. */
const LINK_FLUSH_WAIT_MS = 2_000;

/**
 * Ends the link, and the SSH connection once the link has flushed its last frames (a KILL must
 * reach the holder: ending the connection at once let sshd drop it now and then), or after
 * LINK_FLUSH_WAIT_MS.
 */
function endConnection(client: Client, link: HolderLink): void {
  link.end();
  if (link.isClosed) client.end();
  else {
    link.once("close", () => client.end());
    setTimeout(() => client.end(), LINK_FLUSH_WAIT_MS).unref?.();
  }
}

/**
 * Hangs up a holder terminal's shell from a connection of its own (a closed tab whose terminal
 * this process has not open). OPEN in write mode starts a shell if none runs, so the KILL always
 * finds one to end; the link closes once the KILL has gone out.
 */
export async function hangUpHolderTerminal(endpoint: SshEndpoint, terminalId: string): Promise<void> {
  const client = await connectSsh(endpoint);
  try {
    const link = await connectHolder(client);
    link.open(terminalId, -1, { cols: 80, rows: 24 }, "write");
    link.kill(terminalId);
    link.end();
    await new Promise<void>((resolve) => {
      if (link.isClosed) return resolve();
      link.once("close", () => resolve());
    });
  } finally {
    client.end();
  }
}

/**
 * Reads terminal `id`'s holder log from `logOffset` (or the oldest byte held, when that is gone) up
 * to its end as of now, over a read-only link of its own on `client`, handing the bytes to `sink`.
 */
export async function readLog(
  client: Client,
  id: string,
  logOffset: number,
  sink: (logOffset: number, data: Buffer) => void,
): Promise<void> {
  const link = await connectHolder(client);
  let timer: NodeJS.Timeout | undefined;
  try {
    let startLogOffset = logOffset;
    for (let attempt = 0; attempt < 2; attempt++) {
      let endLogOffset = -1;
      let finish!: (error?: Error) => void;
      const finished = new Promise<void>((resolve, reject) => (finish = (error) => (error ? reject(error) : resolve())));
      const reader = new HolderTerminal(
        id,
        {
          onOpened: (info) => {
            endLogOffset = info.end; // set before any OUTPUT of this reader is handled
            if (info.start >= endLogOffset) finish();
          },
          onOutput: (chunkLogOffset, data) => {
            if (endLogOffset < 0 || chunkLogOffset >= endLogOffset) return finish();
            sink(chunkLogOffset, data.subarray(0, endLogOffset - chunkLogOffset));
            if (chunkLogOffset + data.length >= endLogOffset) finish();
          },
          onGone: () => finish(), // trimmed while we read: the rest is a gap
          onExit: () => finish(),
        },
        { mode: "read", from: startLogOffset },
      );
      link.once("close", () => finish(new Error("holder link closed during the catch-up")));
      timer = setTimeout(() => finish(new Error(`catch-up still reading after ${CATCH_UP_TIMEOUT_MS} ms`)), CATCH_UP_TIMEOUT_MS);
      try {
        await reader.attach(link);
      } catch (error) {
        if (error instanceof HolderGoneError && attempt === 0) {
          startLogOffset = error.oldest; // the first bytes are gone: catch up on what is left
          clearTimeout(timer);
          continue;
        }
        throw error;
      }
      await finished;
      return;
    }
  } finally {
    clearTimeout(timer);
    link.close();
  }
}
