/**
 * Chooses and starts the machine provider the server uses: the local QEMU provider (the embedded
 * default) behind a warm pool, or the static hosts file. For QEMU it also recovers after a
 * restart: VMs of live sessions are adopted, everything else an earlier process left is removed.
 */
import os from "node:os";
import path from "node:path";
import type { Logger } from "pino";
import type { Env } from "../config";
import type { Db } from "../db/client";
import { providerRefsInUse } from "../sessions/lab-sessions";
import type { MachineProvider } from "./provider";
import { detectAccel } from "./qemu/accel";
import { findImage } from "./qemu/image";
import { qemuProvider } from "./qemu/provider";
import { recipeByName } from "./qemu/recipe";
import { SingletonRole } from "../leases/roles";
import { dbHostClaims, loadStaticHosts, staticHostsProvider } from "./static-hosts";
import { providerSessionOf, WarmPool, type PoolStatus } from "./warm-pool";

/** The lab machines every pooled set has (the course's three-node layout). */
const POOL_MACHINES = ["controlplane", "node01", "node02"];
/** The image variant pooled sets boot (the one this workplace builds; labs on others start cold). */
const POOL_IMAGE = "debian-base";

/** The warm pool's role lease: per machine host, since the local QEMU provider's VMs live on the host that booted them. */
export function warmPoolRole(host = os.hostname()): string {
  return `warm-pool:${host}`;
}

/**
 * Keeps `pool` filled only while this process holds the host's warm-pool role. The pool's sets are
 * VMs on this host held in this process's memory, so one process per host keeps them; on the
 * others `pool.create` falls through to cold starts. Losing the role stops the refill and
 * destroys this process's unclaimed sets (the new holder makes its own).
 */
export function poolOnOneProcess(deps: { db: Db; log: Logger }, pool: WarmPool, options: { host?: string; holder?: string; leaseMs?: number; renewMs?: number } = {}): SingletonRole {
  const role = new SingletonRole(deps, warmPoolRole(options.host), { start: () => pool.start(), stop: () => pool.stop() }, options);
  role.start();
  return role;
}

export interface Machines {
  provider: MachineProvider;
  kind: "qemu" | "static" | "netns-demo";
  pool: { status(): PoolStatus } | null;
  /** Reboots one machine of a session (providers that can). */
  reboot?: MachineProvider["reboot"];
  stop(): Promise<void>;
}

/** Logged at every start of the no-VM demo mode. */
export const DEMO_WARNING =
  "DEMO MODE (LABDECK_MACHINES=netns-demo): lab machines are sshd processes on THIS machine, sharing its files and processes; " +
  "whoever uses a lab terminal is root on the Labdeck server. Single-user demos and tests only: never give it to learners.";

/**
 * A hosts file of netns demo hosts (`"demo": true`) is served only when the operator asked for the
 * demo mode by name: a learner-facing deployment never runs it by accident.
 */
export function refuseAccidentalDemo(kind: "static" | "netns-demo", file: string, hosts: { demo: boolean } | null): void {
  if (hosts?.demo && kind !== "netns-demo") {
    throw new Error(
      `${file} lists netns demo hosts ("demo": true): every learner would be root on this server. ` +
        `For a single-user demo on your own machine set LABDECK_MACHINES=netns-demo; for learners list real machines or use QEMU`,
    );
  }
}

export async function startMachines(env: Env, db: Db, log: Logger): Promise<Machines> {
  const kind = env.LABDECK_MACHINES ?? (env.LABDECK_HOSTS_FILE ? "static" : "qemu");
  if (kind === "static" || kind === "netns-demo") {
    const file = env.LABDECK_HOSTS_FILE ?? path.join(env.LABDECK_DATA_DIR, "hosts.json");
    refuseAccidentalDemo(kind, file, await loadStaticHosts(file).catch(() => null));
    if (kind === "netns-demo") log.warn({ file }, DEMO_WARNING);
    log.info({ file }, "machines: static hosts");
    const provider = staticHostsProvider({ file, groupsInUse: () => providerRefsInUse(db, "static"), claims: dbHostClaims(db), log });
    // Groups a stopped process left awaiting their reset are picked up here too.
    provider.startResets();
    return { kind, provider, pool: null, stop: async () => provider.stop() };
  }

  const image = await findImage(env.LABDECK_DATA_DIR);
  if (!image) {
    log.warn({ dataDir: env.LABDECK_DATA_DIR }, "no lab image yet: run `npm run labdeck -- image build`; labs cannot start until it exists");
  }
  let accel: "kvm" | "tcg" = env.LABDECK_QEMU_ACCEL === "kvm" ? "kvm" : "tcg";
  if (env.LABDECK_QEMU_ACCEL === "auto" && image) {
    const choice = await detectAccel(image);
    accel = choice.accel;
    log.info({ accel, detail: choice.detail }, "QEMU accelerator chosen by a timed boot");
  }
  const qemu = qemuProvider({
    dataDir: env.LABDECK_DATA_DIR,
    image: image ?? undefined,
    imageFor: (variant) => findImage(env.LABDECK_DATA_DIR, recipeByName(variant)),
    memoryMiB: env.LABDECK_VM_MEMORY_MIB,
    accel,
    log,
  });

  // Sessions the database still counts as live keep their VMs; anything else is a leftover.
  const live = await db.machine.findMany({
    where: { session: { provider: "qemu", state: { not: "ended" } } },
    select: { sessionId: true, providerRef: true },
  });
  const keep = new Set(live.map((m) => providerSessionOf(m.sessionId, [m])));
  const report = await qemu.adoptOrCleanup({ keep: (id) => keep.has(id) });
  log.info(report, "QEMU machines recovered after start");

  if (!image || env.LABDECK_POOL_SIZE === 0) {
    return { kind, provider: qemu, pool: null, reboot: qemu.reboot, stop: async () => {} };
  }
  const pool = new WarmPool(qemu, { size: env.LABDECK_POOL_SIZE, machines: POOL_MACHINES, image: POOL_IMAGE, log });
  const role = poolOnOneProcess({ db, log }, pool);
  return {
    kind,
    provider: pool,
    pool,
    reboot: qemu.reboot,
    stop: async () => {
      await role.stop();
      await pool.stop();
    },
  };
}
