/**
 * A warm pool in front of a machine provider: keeps sets of machines booted and SSH-ready, so a
 * learner who starts a lab gets machines at once instead of waiting for a cold boot (tens of
 * seconds under TCG). Two kinds of sets:
 *   - generic sets (`size`): booted, no lab's setup; any lab of the pool's layout and image gets
 *     one, and its setup then runs for the learner;
 *   - prepared sets (`labs`, per lab): booted, the lab's setup run and the set-up state
 *     saved (markLabStart) while nobody waits; a learner of that lab gets one with nothing left to
 *     run (`takePrepared`), as long as it was prepared for the lab version the session pins.
 * Sets are complete and personal already (own keys, host keys, hostnames, private network), so a
 * hand-out is a database write. The pool refills behind it, one set at a time, at low CPU
 * priority, and only once the learner's session is set up, so refills never crowd out learners'
 * machines; a refill the host has no room for (memory, or boots in flight) waits and retries.
 *
 * A pooled set is a machine set (provider.ts) created under its own set id ("pool-…"); that id
 * lives on in the machines' providerRef ("<set id>/<machine>"), which is how destroy, reboot and
 * the restart clean-up find the set after it has been handed to a learner's session.
 *
 * Ready sets outlive the process: each is recorded as a spare with the provider (keepSpare), a
 * stop leaves them running, and the next start (or the next process to hold the pool) offers
 * them again (spares) before it boots anything.
 */
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import { isNoCapacity, type MachineProvider, type MachineRequest, type ProvisionedMachine } from "./provider";

/** After a failed refill (no capacity, boot failure), wait this long before trying again, in ms. */
const REFILL_RETRY_MS = 30_000;
/**
 * Longest a hand-out holds the refill back while its session is set up, in ms (sessionSettled
 * normally ends the hold sooner). Measured: a lab's setup on TCG took 60-85 s with a refill
 * booting three VMs beside it, and lost SSH in the e2e runs of 2026-12-01.
 */
const REFILL_HOLD_MAX_MS = 180_000;
/**
 * After a prepared set is handed out the refill waits this long, ms (its session settles at once:
 * nothing to set up): the learner's three terminals log in meanwhile, seconds each under TCG, and
 * a refill restoring three VMs beside them took those seconds (click to prompts 17.9 s in the VM
 * e2e with the refill at once).
 */
const PREPARED_REFILL_DELAY_MS = 30_000;
/** How often the labs' targets are read again (an admin changed them on another process), ms. */
const TARGETS_REFRESH_MS = 10_000;

/** What an admin asks of a lab's prepared sets (PoolTarget rows). */
export interface LabPoolTarget {
  labSlug: string;
  machines: readonly string[];
  image?: string;
  /** Sets kept ready: each hand-out is replaced. */
  reserve: number;
  /** Sets made when the target first appears or its `initial` rises; hand-outs beyond `reserve` are not replaced. */
  initial: number;
  /** Prepared sets handed out since `initial` was set (by any process, before a restart too). */
  handedOut?: number;
}

/** Runs a lab's setup on a fresh pooled set; the pool's link to the labs and the grader's SSH. */
export interface PoolPreparer {
  /** The version (LabVersion hash) a session of the lab would pin now. */
  version(labSlug: string): Promise<string>;
  /**
   * Runs the lab's setup on `machines` and saves the set-up state (markLabStart); resolves with the
   * version it prepared.
   */
  prepare(labSlug: string, machines: ProvisionedMachine[]): Promise<string>;
}

export interface PoolStatus {
  /** Sets ready to hand out (generic and prepared). */
  ready: number;
  /** Whether a set is being created now. */
  filling: boolean;
  /** Generic sets kept ready. */
  size: number;
  /** Hand-outs: prepared sets, generic sets, and cold creates, since start. */
  served: { warm: number; cold: number; prepared?: number };
  lastError?: string;
  /** Per lab with prepared sets: ready now, and what is asked. */
  labs?: { labSlug: string; ready: number; reserve: number; initial: number; wanted: number }[];
}

/** The id of the machine set a session's machines belong to, from their providerRef (else the session id). */
export function setIdOf(sessionId: string, machines: readonly { providerRef: string }[]): string {
  const ref = machines[0]?.providerRef ?? "";
  const slash = ref.indexOf("/");
  return slash > 0 ? ref.slice(0, slash) : sessionId;
}

interface ReadySet {
  machines: ProvisionedMachine[];
  /** Prepared for this lab (its setup done), at this version; undefined: a generic set. */
  labSlug?: string;
  version?: string;
}

export class WarmPool implements MachineProvider {
  readonly name: string;
  private readonly ready: ReadySet[] = [];
  private filling: Promise<void> | null = null;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private targetsTimer: NodeJS.Timeout | null = null;
  private readonly served = { warm: 0, cold: 0, prepared: 0 };
  private lastError: string | undefined;
  /** Handed-out sets (set ids) whose learner's session is still being set up. */
  private readonly holds = new Map<string, NodeJS.Timeout>();
  /** Of those, prepared sets: their hold ends by time, not when their session settles. */
  private readonly delayed = new Set<string>();
  private labTargets: LabPoolTarget[] = [];
  /** Per lab: sets still to make beyond `reserve` from its `initial` (counted down by hand-outs). */
  private readonly initialLeft = new Map<string, number>();
  private readonly initialSeen = new Map<string, number>();

  constructor(
    private readonly inner: MachineProvider,
    /**
     * `size` generic sets of `machines` booting `image` (requests for another variant are created
     * cold); `labs`, when given, the labs' prepared sets.
     */
    private readonly options: {
      size: number;
      machines: readonly string[];
      image?: string;
      log: Logger;
      labs?: { targets(): Promise<LabPoolTarget[]>; preparer: PoolPreparer };
      /** After a prepared set's hand-out, the refill waits this long, ms (default PREPARED_REFILL_DELAY_MS). */
      preparedRefillDelayMs?: number;
    },
  ) {
    this.name = inner.name;
    const { health, reboot, reset, suspend, resume, markLabStart } = inner;
    if (health) this.health = (sid, machines) => health.call(inner, setIdOf(sid, machines), machines);
    if (reboot) this.reboot = (sid, machine) => reboot.call(inner, setIdOf(sid, [machine]), machine);
    if (reset) this.reset = (sid, machine) => reset.call(inner, setIdOf(sid, [machine]), machine);
    if (suspend) this.suspend = (sid, machines) => suspend.call(inner, setIdOf(sid, machines), machines);
    if (resume) this.resume = (sid, machines) => resume.call(inner, setIdOf(sid, machines), machines);
    if (markLabStart) this.markLabStart = (sid, machines) => markLabStart.call(inner, setIdOf(sid, machines), machines);
  }

  /**
   * Starts filling the pool in the background (again after a stop: the pool role moved back
   * here): first with the spares kept on the host, then by making what is still missing.
   */
  start(): void {
    this.stopped = false;
    if (this.options.labs) {
      void this.refreshTargets();
      this.targetsTimer = setInterval(() => void this.refreshTargets(), TARGETS_REFRESH_MS);
      this.targetsTimer.unref();
    }
    if (this.filling) return;
    this.filling = this.adoptSpares().finally(() => {
      this.filling = null;
      this.refill();
    });
  }

  /** Spares kept on the host (by an earlier process, or before a stop) join the ready sets. */
  private async adoptSpares(): Promise<void> {
    if (!this.inner.spares) return;
    try {
      const held = new Set(this.ready.map((s) => setIdOf("", s.machines)));
      const found = await this.inner.spares(held);
      for (const spare of found) this.ready.push({ machines: spare.machines, labSlug: spare.labSlug, version: spare.version });
      if (found.length > 0)
        this.options.log.info(
          { spares: found.map((s) => ({ id: s.setId, lab: s.labSlug })), ready: this.ready.length },
          "warm pool: ready sets kept from before",
        );
    } catch (error) {
      this.options.log.warn({ err: (error as Error).message }, "warm pool: finding kept spares failed");
    }
  }

  status(): PoolStatus {
    const labs = this.labTargets.map((t) => ({
      labSlug: t.labSlug,
      ready: this.ready.filter((s) => s.labSlug === t.labSlug).length,
      reserve: t.reserve,
      initial: t.initial,
      wanted: this.wanted(t),
    }));
    return {
      ready: this.ready.length,
      filling: this.filling !== null,
      size: this.options.size,
      served: { ...this.served },
      lastError: this.lastError,
      ...(this.options.labs ? { labs } : {}),
    };
  }

  /**
   * A set prepared for the request's lab at the version it pins, handed out (null: none ready).
   * The lab's setup has run on it and its state is saved: the caller runs nothing.
   */
  async takePrepared(
    request: MachineRequest & { labVersion: string },
  ): Promise<{ machines: ProvisionedMachine[]; source: "prepared" | "snapshot" } | null> {
    if (request.internet) return null;
    const fits = (s: ReadySet) => s.labSlug === request.labSlug;
    // Sets prepared for an older version of the lab are of no use to anyone any more.
    for (const stale of this.ready.filter((s) => fits(s) && s.version !== request.labVersion))
      this.discard(stale, "prepared for another lab version");
    const at = this.ready.findIndex((s) => fits(s) && s.version === request.labVersion);
    const left = this.initialLeft.get(request.labSlug);
    if (at >= 0) {
      const [set] = this.ready.splice(at, 1);
      this.served.prepared++;
      if (left) this.initialLeft.set(request.labSlug, left - 1);
      return {
        machines: await this.handOut(request, set!.machines, "prepared machines handed out from the warm pool", true),
        source: "prepared",
      };
    }
    // None ready: a new set from the lab version's template (seconds), if the provider keeps one.
    const restored = await this.inner.restorePrepared?.(request);
    if (!restored) return null;
    this.served.prepared++;
    if (left) this.initialLeft.set(request.labSlug, left - 1);
    return { machines: await this.handOut(request, restored, "machines started from the lab's template", true), source: "snapshot" };
  }

  async create(request: MachineRequest): Promise<ProvisionedMachine[]> {
    // Pooled sets are made without internet access: a lab that asks for it goes to the provider.
    const fits =
      !request.internet &&
      sameNames(request.machines, this.options.machines) &&
      (request.image ?? this.options.image) === this.options.image;
    const at = fits ? this.ready.findIndex((s) => s.labSlug === undefined) : -1;
    if (at >= 0) {
      const [set] = this.ready.splice(at, 1);
      this.served.warm++;
      return this.handOut(request, set!.machines, "machines handed out from the warm pool");
    }
    this.served.cold++;
    return this.inner.create(request);
  }

  private async handOut(
    request: MachineRequest,
    set: ProvisionedMachine[],
    message: string,
    prepared = false,
  ): Promise<ProvisionedMachine[]> {
    // Not a spare any more, before the caller's database names it: a restart must not offer it again.
    await this.inner.promote?.(setIdOf(request.sessionId, set), set);
    this.options.log.info({ sessionId: request.sessionId, lab: request.labSlug, ready: this.ready.length }, message);
    // The refill boots a set at low priority, but on a small host that still slows the
    // learner's setup a lot: it waits until the session is set up (sessionSettled) or the cap;
    // after a prepared set, until the learner's terminals had time to log in.
    const id = setIdOf(request.sessionId, set);
    const timer = setTimeout(
      () => this.release(id),
      prepared ? (this.options.preparedRefillDelayMs ?? PREPARED_REFILL_DELAY_MS) : REFILL_HOLD_MAX_MS,
    );
    timer.unref();
    this.holds.set(id, timer);
    if (prepared) this.delayed.add(id);
    return set;
  }

  destroy(sessionId: string, machines: readonly ProvisionedMachine[]): Promise<void> {
    this.release(setIdOf(sessionId, machines));
    return this.inner.destroy(setIdOf(sessionId, machines), machines);
  }

  sessionSettled(sessionId: string, machines: readonly ProvisionedMachine[]): void {
    const id = setIdOf(sessionId, machines);
    // A prepared set's session settles at once; its hold runs out on its own (PREPARED_REFILL_DELAY_MS).
    if (!this.delayed.has(id)) this.release(id);
  }

  /** Ends a hand-out's hold on the refill (idempotent). */
  private release(id: string): void {
    const timer = this.holds.get(id);
    this.delayed.delete(id);
    if (!timer) return;
    clearTimeout(timer);
    this.holds.delete(id);
    this.refill();
  }

  // A handed-out set is the inner provider's from then on: lifecycle calls go straight to it,
  // under the set id the set was made with.
  readonly health?: MachineProvider["health"];
  readonly reboot?: MachineProvider["reboot"];
  readonly reset?: MachineProvider["reset"];
  readonly suspend?: MachineProvider["suspend"];
  readonly resume?: MachineProvider["resume"];
  readonly markLabStart?: MachineProvider["markLabStart"];

  /** Waits for the current refill (tests, benchmarks). */
  async settled(): Promise<void> {
    while (this.filling) await this.filling;
  }

  /**
   * Stops refilling. The sets nobody was given stay ready as spares on the host for the next
   * start (or process) to offer, unless `destroySpares` (tests, a drained host) or the provider
   * keeps no spares.
   */
  async stop(options: { destroySpares?: boolean } = {}): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.targetsTimer) clearInterval(this.targetsTimer);
    this.targetsTimer = null;
    for (const timer of this.holds.values()) clearTimeout(timer);
    this.holds.clear();
    this.delayed.clear();
    await this.filling?.catch(() => undefined);
    const sets = this.ready.splice(0);
    // A provider that cannot keep spares (KubeVirt) would leave them to the next start's clean-up.
    if (options.destroySpares || !this.inner.keepSpare)
      await Promise.all(sets.map((set) => this.destroy("", set.machines).catch(() => undefined)));
  }

  /** Re-reads the labs' targets; sets of labs no longer wanted are destroyed, raised ones refilled. */
  async refreshTargets(): Promise<void> {
    if (!this.options.labs || this.stopped) return;
    let targets: LabPoolTarget[];
    try {
      targets = await this.options.labs.targets();
    } catch (error) {
      this.options.log.warn({ err: (error as Error).message }, "warm pool: reading the labs' targets failed");
      return;
    }
    for (const t of targets) {
      // A new target, or a changed `initial` (an admin preparing a class): make that many once,
      // less those handed out since it was set (before a restart too).
      const left = Math.max(0, t.initial - (t.handedOut ?? 0));
      const known = this.initialLeft.get(t.labSlug);
      const changed = (this.initialSeen.get(t.labSlug) ?? -1) !== t.initial;
      this.initialLeft.set(t.labSlug, changed || known === undefined ? left : Math.min(known, left));
      this.initialSeen.set(t.labSlug, t.initial);
    }
    const wanted = new Set(targets.map((t) => t.labSlug));
    for (const slug of [...this.initialSeen.keys()]) {
      if (wanted.has(slug)) continue;
      this.initialSeen.delete(slug);
      this.initialLeft.delete(slug);
    }
    this.labTargets = targets;
    for (const set of this.ready.filter((s) => s.labSlug !== undefined && !wanted.has(s.labSlug)))
      this.discard(set, "the lab's target was removed");
    for (const t of targets) {
      const sets = this.ready.filter((s) => s.labSlug === t.labSlug);
      for (const extra of sets.slice(this.wanted(t))) this.discard(extra, "more than the lab's target");
    }
    this.refill();
  }

  /** Sets of a lab's target to keep ready now. */
  private wanted(target: LabPoolTarget): number {
    return Math.max(target.reserve, this.initialLeft.get(target.labSlug) ?? 0);
  }

  private discard(set: ReadySet, why: string): void {
    const at = this.ready.indexOf(set);
    if (at < 0) return;
    this.ready.splice(at, 1);
    this.options.log.info({ lab: set.labSlug, why }, "warm pool: set removed");
    void this.inner.destroy(setIdOf("", set.machines), set.machines).catch(() => undefined);
    this.refill();
  }

  /** What to make next: the lab short of the most prepared sets, else a generic set; null when full. */
  private nextTarget(): LabPoolTarget | "generic" | null {
    let best: LabPoolTarget | null = null;
    let bestShort = 0;
    for (const t of this.labTargets) {
      const short = this.wanted(t) - this.ready.filter((s) => s.labSlug === t.labSlug).length;
      if (short > bestShort) [best, bestShort] = [t, short];
    }
    if (best) return best;
    return this.ready.filter((s) => s.labSlug === undefined).length < this.options.size ? "generic" : null;
  }

  /** A background request for a set of the lab's template (a new pool id). */
  private labRequest(lab: LabPoolTarget, version: string): MachineRequest & { labVersion: string } {
    return {
      sessionId: `pool-${randomBytes(6).toString("hex")}`,
      labSlug: lab.labSlug,
      machines: lab.machines,
      image: lab.image,
      background: true,
      labVersion: version,
    };
  }

  private refill(): void {
    if (this.stopped || this.filling || this.holds.size > 0) return;
    const target = this.nextTarget();
    if (!target) return;
    const lab = target === "generic" ? undefined : target;
    const id = `pool-${randomBytes(6).toString("hex")}`;
    const started = Date.now();
    const fromTemplate = async (): Promise<{ machines: ProvisionedMachine[]; version: string } | null> => {
      if (!lab || !this.inner.restorePrepared) return null;
      const version = await this.options.labs!.preparer.version(lab.labSlug);
      const machines = await this.inner.restorePrepared({ ...this.labRequest(lab, version), sessionId: id });
      return machines && { machines, version };
    };
    this.filling = fromTemplate()
      .then(
        async (restored) =>
          restored ??
          this.inner
            .create({
              sessionId: id,
              labSlug: lab?.labSlug ?? "(warm pool)",
              machines: lab?.machines ?? this.options.machines,
              image: lab?.image ?? this.options.image,
              background: true,
            })
            .then(async (machines) => {
              if (!lab) return { machines, version: undefined as string | undefined };
              let version: string;
              try {
                version = await this.options.labs!.preparer.prepare(lab.labSlug, machines);
              } catch (error) {
                await this.inner.destroy(id, machines).catch(() => undefined);
                throw error;
              }
              if (!this.inner.savePrepared || !this.inner.restorePrepared) return { machines, version };
              // The set becomes the lab version's template; this and the next sets start from it in seconds.
              await this.inner.savePrepared(id, machines, version);
              const again = await this.inner.restorePrepared(this.labRequest(lab, version));
              if (!again) throw new Error(`${lab.labSlug}: the template just saved does not load`);
              return { machines: again, version };
            }),
      )
      .then(
        async ({ machines, version }) => {
          this.lastError = undefined;
          if (this.stopped) return void (await this.inner.destroy(id, machines).catch(() => undefined));
          await this.inner.keepSpare?.(setIdOf(id, machines), machines, { labSlug: lab?.labSlug, version });
          this.ready.push({ machines, labSlug: lab?.labSlug, version });
          this.options.log.info(
            { id, lab: lab?.labSlug, ms: Date.now() - started, ready: this.ready.length },
            lab ? "warm pool prepared set ready" : "warm pool set ready",
          );
        },
        (error: Error) => {
          this.lastError = error.message;
          this.options.log[isNoCapacity(error) ? "info" : "error"]({ lab: lab?.labSlug, err: error.message }, "warm pool refill failed");
          this.retryTimer = setTimeout(() => this.refill(), REFILL_RETRY_MS);
          this.retryTimer.unref();
        },
      )
      .finally(() => {
        this.filling = null;
        if (!this.lastError) this.refill();
      });
  }
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((name, i) => name === b[i]);
}
