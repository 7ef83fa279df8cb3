/**
 * WarmPool's hand-out rules with an in-memory provider standing in for QEMU (the far edge faked;
 * warm-pool.vm.test.ts runs the pool over real VMs): only requests that match the pooled
 * layout and image variant are served from the pool; spares are made in the background and
 * promoted on hand-out; lifecycle calls reach the inner provider under the pooled set's id.
 */
import pino from "pino";
import { describe, expect, it } from "vitest";
import type { MachineProvider, MachineRequest, ProvisionedMachine, SpareRecord, SpareSet } from "./provider";
import { WarmPool } from "./warm-pool";

class InMemoryProvider implements MachineProvider {
  readonly name = "memory";
  readonly requests: MachineRequest[] = [];
  readonly promoted: string[] = [];
  readonly suspended: string[] = [];
  async create(request: MachineRequest): Promise<ProvisionedMachine[]> {
    this.requests.push(request);
    return request.machines.map((name) => ({
      name,
      host: "127.0.0.1",
      port: 22,
      user: "root",
      privateKey: "k",
      hostKey: "h",
      providerRef: `${request.sessionId}/${name}`,
    }));
  }
  readonly destroyed: string[] = [];
  async destroy(sessionId: string): Promise<void> {
    this.destroyed.push(sessionId);
  }
  async promote(sessionId: string): Promise<void> {
    this.promoted.push(sessionId);
  }
  async suspend(sessionId: string): Promise<void> {
    this.suspended.push(sessionId);
  }
}

const MACHINES = ["controlplane", "node01", "node02"];
const log = pino({ level: "silent" });

describe("WarmPool (in-memory provider)", () => {
  it("serves matching requests from the pool, others cold, and refills behind a hand-out", async () => {
    const inner = new InMemoryProvider();
    const pool = new WarmPool(inner, { size: 1, machines: MACHINES, image: "debian-base", log });
    pool.start();
    await pool.settled();
    expect(inner.requests[0]).toMatchObject({ machines: MACHINES, image: "debian-base", background: true });

    const other = await pool.create({ sessionId: "s-k8s", labSlug: "multi-node", machines: MACHINES, image: "k8s-v1.31" });
    expect(other[0]!.providerRef).toBe("s-k8s/controlplane");
    // A lab that asks for the internet never gets a pooled set (made without it): the provider decides.
    const online = await pool.create({ sessionId: "s-net", labSlug: "x", machines: MACHINES, image: "debian-base", internet: true });
    expect(online[0]!.providerRef).toBe("s-net/controlplane");
    expect(inner.requests.at(-1)).toMatchObject({ sessionId: "s-net", internet: true });
    const fewer = await pool.create({ sessionId: "s-one", labSlug: "x", machines: ["controlplane"], image: "debian-base" });
    expect(fewer[0]!.providerRef).toBe("s-one/controlplane");
    expect(pool.status()).toMatchObject({ ready: 1, served: { warm: 0, cold: 3 } });

    const warm = await pool.create({ sessionId: "s-warm", labSlug: "preinstall-checks", machines: MACHINES, image: "debian-base" });
    const pooledId = warm[0]!.providerRef.split("/")[0]!;
    expect(pooledId).toMatch(/^pool-/);
    expect(inner.promoted).toEqual([pooledId]);
    expect(pool.status().served).toEqual({ warm: 1, cold: 3, prepared: 0 });
    // No refill while the learner's session is set up: it would take the CPU the setup needs.
    await pool.settled();
    expect(pool.status()).toMatchObject({ ready: 0, filling: false });
    const made = inner.requests.length;
    pool.sessionSettled("s-warm", warm);
    await pool.settled();
    expect(pool.status().ready).toBe(1);
    expect(inner.requests.length).toBe(made + 1);

    await pool.suspend!("s-warm", warm);
    expect(inner.suspended).toEqual([pooledId]);
    await pool.stop();
  });

  it("a hand-out whose session ends before it is set up releases the refill too", async () => {
    const inner = new InMemoryProvider();
    const pool = new WarmPool(inner, { size: 1, machines: MACHINES, image: "debian-base", log });
    pool.start();
    await pool.settled();
    const warm = await pool.create({ sessionId: "s-gone", labSlug: "x", machines: MACHINES, image: "debian-base" });
    await pool.settled();
    expect(pool.status().ready).toBe(0);
    await pool.destroy("s-gone", warm);
    await pool.settled();
    expect(pool.status().ready).toBe(1);
    await pool.stop();
  });
});

/** Keeps spare records as a host's disk would: they outlive the pool that wrote them. */
class SpareKeepingProvider extends InMemoryProvider {
  readonly kept = new Map<string, { machines: ProvisionedMachine[]; spare: SpareRecord }>();
  async keepSpare(sessionId: string, machines: readonly ProvisionedMachine[], spare: SpareRecord): Promise<void> {
    this.kept.set(sessionId, { machines: [...machines], spare });
  }
  override async promote(sessionId: string): Promise<void> {
    this.kept.delete(sessionId);
    await super.promote(sessionId);
  }
  override async destroy(sessionId: string): Promise<void> {
    this.kept.delete(sessionId);
    await super.destroy(sessionId);
  }
  async spares(except: ReadonlySet<string>): Promise<SpareSet[]> {
    return [...this.kept].filter(([id]) => !except.has(id)).map(([setId, { machines, spare }]) => ({ setId, machines, ...spare }));
  }
}

describe("WarmPool spares across a restart (in-memory provider keeping spare records)", () => {
  it("a stop keeps the ready set; the next pool offers it before making any; a handed-out set is never offered again", async () => {
    const inner = new SpareKeepingProvider();
    const first = new WarmPool(inner, { size: 1, machines: MACHINES, image: "debian-base", log });
    first.start();
    await first.settled();
    expect(inner.requests).toHaveLength(1);
    const [spareId] = [...inner.kept.keys()];
    expect(spareId).toMatch(/^pool-/);
    await first.stop();
    expect(inner.destroyed).toEqual([]);

    // The next process: the kept set is ready at once and nothing is made.
    const second = new WarmPool(inner, { size: 1, machines: MACHINES, image: "debian-base", log });
    second.start();
    await second.settled();
    expect(second.status().ready).toBe(1);
    expect(inner.requests).toHaveLength(1);
    const handed = await second.create({ sessionId: "s-1", labSlug: "x", machines: MACHINES, image: "debian-base" });
    expect(handed[0]!.providerRef).toBe(`${spareId}/controlplane`);
    expect(inner.kept.has(spareId!)).toBe(false);
    await second.stop();

    // A third process does not offer the handed-out set (its record ended at the hand-out).
    const third = new WarmPool(inner, { size: 1, machines: MACHINES, image: "debian-base", log });
    third.start();
    await third.settled();
    expect(inner.requests).toHaveLength(2);
    expect([...inner.kept.keys()]).not.toContain(spareId);
    await third.stop({ destroySpares: true });
    expect(inner.kept.size).toBe(0);
  });

  it("a provider that keeps no spares has them destroyed at a stop, as before", async () => {
    const inner = new InMemoryProvider();
    const pool = new WarmPool(inner, { size: 1, machines: MACHINES, image: "debian-base", log });
    pool.start();
    await pool.settled();
    await pool.stop();
    expect(inner.destroyed).toHaveLength(1);
  });
});

describe("WarmPool prepared sets per lab (in-memory provider, recorded preparer)", () => {
  /** A preparer that records what it prepared; `fail` makes the next prepare throw. */
  function preparer(version: { current: string }) {
    const prepared: string[] = [];
    const state = { fail: false };
    return {
      prepared,
      state,
      version: async () => version.current,
      async prepare(slug: string, machines: ProvisionedMachine[]): Promise<string> {
        if (state.fail) {
          state.fail = false;
          throw new Error("setup failed on controlplane");
        }
        prepared.push(`${slug}:${machines[0]!.providerRef.split("/")[0]}`);
        return version.current;
      },
    };
  }
  const take = (pool: WarmPool, sessionId: string, labVersion: string) =>
    pool.takePrepared({ sessionId, labSlug: "lab-a", machines: MACHINES, labVersion });

  it("makes `initial` sets up front, keeps `reserve` after that, and hands them out only to the lab at the version they were prepared for", async () => {
    const inner = new InMemoryProvider();
    const version = { current: "v1" };
    const prep = preparer(version);
    const targets = [{ labSlug: "lab-a", machines: MACHINES, reserve: 1, initial: 2 }];
    const pool = new WarmPool(inner, {
      size: 0,
      machines: MACHINES,
      log,
      labs: { targets: async () => targets, preparer: prep },
      preparedRefillDelayMs: 300,
    });
    pool.start();
    await expect.poll(() => pool.status().labs?.[0]?.ready).toBe(2);
    expect(prep.prepared).toHaveLength(2);
    expect(inner.requests.every((r) => r.background && r.labSlug === "lab-a")).toBe(true);

    // A generic request (another lab) never gets a prepared set.
    const other = await pool.create({ sessionId: "s-other", labSlug: "lab-b", machines: MACHINES });
    expect(other[0]!.providerRef).toBe("s-other/controlplane");
    expect(await pool.takePrepared({ sessionId: "s-b", labSlug: "lab-b", machines: MACHINES, labVersion: "v1" })).toBeNull();

    const first = (await take(pool, "s1", "v1"))!.machines;
    pool.sessionSettled("s1", first);
    const second = (await take(pool, "s2", "v1"))!.machines;
    pool.sessionSettled("s2", second);
    expect(first[0]!.providerRef).toMatch(/^pool-/);
    expect(pool.status().served.prepared).toBe(2);
    // The learner's terminals log in first: no refill at once, though the sessions settled.
    await new Promise((r) => setTimeout(r, 100));
    expect(pool.status()).toMatchObject({ filling: false, ready: 0 });
    // The initial two are used up: one (the reserve) is made again, not two.
    await expect.poll(() => pool.status().labs?.[0]?.ready).toBe(1);
    await pool.settled();
    expect(prep.prepared).toHaveLength(3);
    expect(pool.status().labs?.[0]).toMatchObject({ ready: 1, reserve: 1, wanted: 1 });

    // The lab changed: the set prepared for v1 is thrown away, not handed to a v2 session.
    version.current = "v2";
    const destroyedBefore = inner.destroyed.length;
    expect(await take(pool, "s3", "v2")).toBeNull();
    expect(inner.destroyed.length).toBe(destroyedBefore + 1);
    await expect.poll(() => pool.status().labs?.[0]?.ready).toBe(1);
    expect(await take(pool, "s4", "v2")).not.toBeNull();
    await pool.stop();
  });

  it("a restart makes only what is left of `initial`: hand-outs since the target was set count against it", async () => {
    const inner = new InMemoryProvider();
    const prep = preparer({ current: "v1" });
    // Three asked up front, two handed out before this process started (the sessions say so).
    const targets = [{ labSlug: "lab-a", machines: MACHINES, reserve: 0, initial: 3, handedOut: 2 }];
    const pool = new WarmPool(inner, { size: 0, machines: MACHINES, log, labs: { targets: async () => targets, preparer: prep } });
    pool.start();
    await expect.poll(() => pool.status().labs?.[0]?.ready).toBe(1);
    await pool.settled();
    expect(prep.prepared).toHaveLength(1);
    // An admin asks again (a new `initial`): that many are made, whatever was handed out before.
    targets[0] = { ...targets[0]!, initial: 2, handedOut: 0 };
    await pool.refreshTargets();
    await expect.poll(() => pool.status().labs?.[0]?.ready).toBe(2);
    await pool.stop();
  });

  it("a failed preparation destroys its set and says why; removing the lab's target removes its sets", async () => {
    const inner = new InMemoryProvider();
    const prep = preparer({ current: "v1" });
    prep.state.fail = true;
    let targets = [{ labSlug: "lab-a", machines: MACHINES, reserve: 1, initial: 1 }];
    const pool = new WarmPool(inner, { size: 0, machines: MACHINES, log, labs: { targets: async () => targets, preparer: prep } });
    pool.start();
    await expect.poll(() => pool.status().lastError).toBe("setup failed on controlplane");
    expect(inner.destroyed).toHaveLength(1);
    expect(pool.status().ready).toBe(0);
    await pool.stop();

    const again = new WarmPool(inner, { size: 0, machines: MACHINES, log, labs: { targets: async () => targets, preparer: prep } });
    again.start();
    await expect.poll(() => again.status().ready).toBe(1);
    targets = [];
    await again.refreshTargets();
    expect(again.status().ready).toBe(0);
    expect(inner.destroyed).toHaveLength(2);
    await again.stop();
  });

  it("with a provider that keeps templates: the first set is prepared and kept as the lab version's template, the next ones and a hand-out with none ready start from it", async () => {
    const templates = new Map<string, string>(); // "lab@version" -> template id
    const restores: string[] = [];
    class TemplatingProvider extends InMemoryProvider {
      async savePrepared(sessionId: string, _machines: readonly ProvisionedMachine[], labVersion: string): Promise<void> {
        templates.set(`lab-a@${labVersion}`, sessionId);
      }
      async restorePrepared(request: MachineRequest & { labVersion: string }): Promise<ProvisionedMachine[] | null> {
        if (!templates.has(`${request.labSlug}@${request.labVersion}`)) return null;
        restores.push(request.sessionId);
        return this.create(request);
      }
    }
    const inner = new TemplatingProvider();
    const prep = preparer({ current: "v1" });
    const pool = new WarmPool(inner, {
      size: 0,
      machines: MACHINES,
      log,
      labs: { targets: async () => [{ labSlug: "lab-a", machines: MACHINES, reserve: 1, initial: 1 }], preparer: prep },
      preparedRefillDelayMs: 0,
    });
    pool.start();
    await expect.poll(() => pool.status().labs?.[0]?.ready).toBe(1);
    expect(prep.prepared).toHaveLength(1); // set up once...
    expect(templates.get("lab-a@v1")).toBeTruthy(); // ...kept as the template...
    expect(restores).toHaveLength(1); // ...and the ready set started from it

    const taken = (await take(pool, "s1", "v1"))!;
    expect(taken.source).toBe("prepared");
    const direct = (await take(pool, "s2", "v1"))!; // none ready: straight from the template
    expect(direct.source).toBe("snapshot");
    pool.sessionSettled("s1", taken.machines);
    pool.sessionSettled("s2", direct.machines);
    await expect.poll(() => pool.status().labs?.[0]?.ready).toBe(1);
    expect(prep.prepared).toHaveLength(1); // never set up again
    expect(restores.length).toBeGreaterThanOrEqual(3);
    // Another version has no template: its set is prepared from scratch again.
    expect(await take(pool, "s3", "v2")).toBeNull();
    await pool.stop();
  });
});
