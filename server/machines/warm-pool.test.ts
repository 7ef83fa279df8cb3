/**
 * WarmPool's hand-out rules with an in-memory provider standing in for QEMU (the far edge faked;
 * warm-pool.qemu.test.ts runs the pool over real VMs): only requests that match the pooled
 * layout and image variant are served from the pool; spares are made in the background and
 * promoted on hand-out; lifecycle calls reach the inner provider under the pooled set's id.
 */
import pino from "pino";
import { describe, expect, it } from "vitest";
import type { MachineProvider, MachineRequest, ProvisionedMachine } from "./provider";
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
  async destroy(): Promise<void> {}
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
    expect(pool.status().served).toEqual({ warm: 1, cold: 3 });
    await pool.settled();
    expect(pool.status().ready).toBe(1);

    await pool.suspend!("s-warm", warm);
    expect(inner.suspended).toEqual([pooledId]);
    await pool.stop();
  });
});
