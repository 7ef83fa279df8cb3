/**
 * A warm pool in front of a machine provider: keeps `size` sets of machines booted and
 * SSH-ready, so a learner who starts a lab gets machines at once instead of waiting for a cold
 * boot (tens of seconds under TCG). Sets are complete and personal already (own keys, host keys,
 * hostnames, private network), so hand-out is a database write; the pool refills behind it, one
 * set at a time so refills never crowd out learners' machines for CPU.
 *
 * A pooled set is created under its own provider session id ("pool-…"); that id lives on in the
 * machines' providerRef ("<provider session>/<machine>"), which is how destroy, reboot and the
 * restart clean-up find the set after it has been handed to a learner's session.
 */
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import { isNoCapacity, type MachineProvider, type MachineRequest, type ProvisionedMachine } from "./provider";

/** After a failed refill (no capacity, boot failure), wait this long before trying again, in ms. */
const REFILL_RETRY_MS = 30_000;

export interface PoolStatus {
  /** Sets ready to hand out. */
  ready: number;
  /** Whether a set is being created now. */
  filling: boolean;
  size: number;
  /** Hand-outs served from the pool and cold creates since start. */
  served: { warm: number; cold: number };
  lastError?: string;
}

/** The provider's own session id for a set of machines, from their providerRef. */
export function providerSessionOf(sessionId: string, machines: readonly { providerRef: string }[]): string {
  const ref = machines[0]?.providerRef ?? "";
  const slash = ref.indexOf("/");
  return slash > 0 ? ref.slice(0, slash) : sessionId;
}

export class WarmPool implements MachineProvider {
  readonly name: string;
  private readonly ready: ProvisionedMachine[][] = [];
  private filling: Promise<void> | null = null;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private readonly served = { warm: 0, cold: 0 };
  private lastError: string | undefined;

  constructor(
    private readonly inner: MachineProvider,
    /** `image`: the variant every pooled set boots; requests for another variant are created cold. */
    private readonly options: { size: number; machines: readonly string[]; image?: string; log: Logger },
  ) {
    this.name = inner.name;
    const { health, reboot, reset, suspend, resume } = inner;
    if (health) this.health = (sid, machines) => health.call(inner, providerSessionOf(sid, machines), machines);
    if (reboot) this.reboot = (sid, machine) => reboot.call(inner, providerSessionOf(sid, [machine]), machine);
    if (reset) this.reset = (sid, machine) => reset.call(inner, providerSessionOf(sid, [machine]), machine);
    if (suspend) this.suspend = (sid, machines) => suspend.call(inner, providerSessionOf(sid, machines), machines);
    if (resume) this.resume = (sid, machines) => resume.call(inner, providerSessionOf(sid, machines), machines);
  }

  /** Starts filling the pool in the background (again after a stop: the pool role moved back here). */
  start(): void {
    this.stopped = false;
    this.refill();
  }

  status(): PoolStatus {
    return { ready: this.ready.length, filling: this.filling !== null, size: this.options.size, served: { ...this.served }, lastError: this.lastError };
  }

  async create(request: MachineRequest): Promise<ProvisionedMachine[]> {
    // Pooled sets are made without internet access: a lab that asks for it goes to the provider.
    const fits =
      !request.internet && sameNames(request.machines, this.options.machines) && (request.image ?? this.options.image) === this.options.image;
    const set = fits ? this.ready.shift() : undefined;
    if (set) {
      this.served.warm++;
      await this.inner.promote?.(providerSessionOf(request.sessionId, set), set).catch(() => undefined);
      this.options.log.info({ sessionId: request.sessionId, ready: this.ready.length }, "machines handed out from the warm pool");
      this.refill();
      return set;
    }
    this.served.cold++;
    return this.inner.create(request);
  }

  destroy(sessionId: string, machines: readonly ProvisionedMachine[]): Promise<void> {
    return this.inner.destroy(providerSessionOf(sessionId, machines), machines);
  }

  // A handed-out set is the inner provider's from then on: lifecycle calls go straight to it,
  // under the provider session id the set was made with.
  readonly health?: MachineProvider["health"];
  readonly reboot?: MachineProvider["reboot"];
  readonly reset?: MachineProvider["reset"];
  readonly suspend?: MachineProvider["suspend"];
  readonly resume?: MachineProvider["resume"];

  /** Waits for the current refill (tests, benchmarks). */
  async settled(): Promise<void> {
    while (this.filling) await this.filling;
  }

  /** Stops refilling and destroys the sets nobody was given. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.filling?.catch(() => undefined);
    const sets = this.ready.splice(0);
    await Promise.all(sets.map((set) => this.destroy("", set).catch(() => undefined)));
  }

  private refill(): void {
    if (this.stopped || this.filling || this.ready.length >= this.options.size) return;
    const id = `pool-${randomBytes(6).toString("hex")}`;
    const started = Date.now();
    this.filling = this.inner
      .create({ sessionId: id, labSlug: "(warm pool)", machines: this.options.machines, image: this.options.image, background: true })
      .then(
        async (set) => {
          this.lastError = undefined;
          if (this.stopped) return void (await this.destroy(id, set).catch(() => undefined));
          this.ready.push(set);
          this.options.log.info({ id, ms: Date.now() - started, ready: this.ready.length }, "warm pool set ready");
        },
        (error: Error) => {
          this.lastError = error.message;
          this.options.log[isNoCapacity(error) ? "info" : "error"]({ err: error.message }, "warm pool refill failed");
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
