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
import { HolderGoneError, HolderTerminal, connectHolder, type HolderHello, type HolderLink } from "../holder/client";
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
        onExit: () => this.onExit?.(),
        onGone: () => this.onGone?.(),
        onInputAck: (writer, seq) => this.active?.onInputAck?.(writer, seq),
      },
      { tail: ATTACH_TAIL_BYTES },
    );
  }

  async open(size: PtySize | undefined, handlers: PtyHandlers, offset?: number): Promise<PtyChannel> {
    const reached = await this.reachHolder();
    if (!("link" in reached)) return this.openFallback(size, handlers, reached.why);
    const { client, link } = reached;
    const rebooted = await this.followEpoch(link.hello!, offset);
    // The recording first catches up on what no process read (live output waits for it).
    this.options.recording?.catchUp(this.epoch, (logOffset, sink) => readLog(client, this.terminalId, logOffset, sink));
    return this.attach(client, link, size, handlers, rebooted);
  }

  noticed(notice: TerminalNotice): void {
    this.options.recording?.notice(notice);
  }

  /** The current log epoch's name: "<bootId>/<instance>". */
  private get epoch(): string {
    return `${this.bootId}/${this.instance}`;
  }

  private output(logOffset: number, data: Buffer): void {
    // The recording's log epoch: log offsets start at 0 again with a new boot *or* a new holder
    // instance (a holder restarted on the same boot); keyed by the boot alone, the recorder
    // took a restarted holder's output for bytes it already had and dropped it.
    if (this.bootId !== undefined) this.options.recording?.output(this.epoch, logOffset, data);
    this.endLogOffset = logOffset + data.byteLength;
    this.active?.onData(data, this.startOffset + logOffset);
  }

  /**
   * An SSH connection and a link to the machine's holder, tried again after each wait of
   * `holderRetryMs`; else why the holder did not answer. A machine that does not answer SSH
   * throws, as before (the terminal retries it).
   */
  private async reachHolder(): Promise<{ client: Client; link: HolderLink } | { why: string }> {
    const waits = this.options.holderRetryMs ?? HOLDER_RETRY_MS;
    for (let attempt = 0; ; attempt++) {
      const client = await connectSsh(this.endpoint);
      try {
        return { client, link: await connectHolder(client) };
      } catch (error) {
        client.end();
        const wait = waits[attempt];
        if (wait === undefined) return { why: (error as Error).message };
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  /**
   * The direct PTY, the last resort, with a line saying that the shell ends with this server. It
   * asks every `holderProbeMs` whether the holder answers again; once it does, the terminal is
   * told so and its direct shell ends, and the terminal opens again, on the holder.
   */
  private async openFallback(size: PtySize | undefined, handlers: PtyHandlers, why: string): Promise<PtyChannel> {
    log.warn({ machine: this.machine, terminal: this.terminalId, why }, "terminal holder unreachable; a direct shell instead");
    const channel = await this.fallback.open(size, handlers);
    handlers.onNotice?.("fallback");
    let probing = false;
    const probe = setInterval(() => {
      if (probing) return;
      probing = true;
      void this.holderAnswers()
        .then((back) => {
          if (!back) return;
          clearInterval(probe);
          log.info({ machine: this.machine, terminal: this.terminalId }, "terminal holder answers again; leaving the direct shell");
          handlers.onNotice?.("holderBack");
          channel.close();
        })
        .finally(() => (probing = false));
    }, this.options.holderProbeMs ?? HOLDER_PROBE_MS);
    probe.unref();
    return {
      ...channel,
      close: (endShell) => {
        clearInterval(probe);
        channel.close(endShell);
      },
    };
  }

  /** Whether the machine's holder answers now (one try, the connection closed again). */
  private async holderAnswers(): Promise<boolean> {
    try {
      const client = await connectSsh(this.endpoint);
      try {
        (await connectHolder(client)).close();
        return true;
      } finally {
        client.end();
      }
    } catch {
      return false;
    }
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
   * output, until the shell exits or the connection ends.
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
    let returned = false; // onClose only for a channel the terminal has been given
    const finish = (error?: Error) => {
      if (done) return;
      done = true;
      this.leave(handlers);
      endConnection(client, link);
      if (returned) handlers.onClose(error);
    };
    link.on("close", () => finish(new Error(`${name}: connection lost`)));
    client.on("error", (error) => finish(new Error(`${name}: ${error.message}`)));
    client.on("close", () => finish(new Error(`${name}: connection closed`)));
    if (rebooted) handlers.onNotice?.("rebooted");
    this.active = handlers;
    // The shell ended: a normal close; the terminal opens again, which starts a fresh shell.
    this.onExit = () => finish();
    // This reader fell behind the log (every viewer stopped reading while output flooded), or
    // a resume asked for bytes no longer held: go on from the last ATTACH_TAIL_BYTES; the
    // terminal rebuilds its screen from them and sends viewers a snapshot.
    this.onGone = () => {
      this.term.next = -1;
      void this.term.attach(link).catch(() => undefined);
    };
    // No writer's size yet: the OPEN leaves the shell's size as it is.
    if (size) {
      this.term.resize(size);
      this.options.recording?.resize(size.cols, size.rows);
    }
    try {
      await this.term.attach(link);
    } catch (error) {
      if (!(error instanceof HolderGoneError)) {
        finish(error as Error);
        throw error;
      }
      // Gone while we were away: the handler above re-attached from the oldest byte held.
    }
    if (done) throw new Error(`${name}: connection lost`);
    returned = true;
    return this.channel(link, finish);
  }

  /** The channel's side: stops handing output to `handlers` and records where this process leaves the log. */
  private leave(handlers: PtyHandlers): void {
    if (this.active === handlers) this.active = null;
    this.onExit = this.onGone = null;
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
