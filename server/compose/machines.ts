/**
 * Chooses and starts the machine provider the server uses: the local QEMU provider (the embedded
 * default) behind a warm pool, the static hosts file, or KubeVirt on a cluster (behind a warm pool). For QEMU it also recovers after a
 * restart: VMs of live sessions are adopted, everything else an earlier process left is removed.
 */
import os from "node:os";
import path from "node:path";
import type { Logger } from "pino";
import type { Env } from "../config";
import type { Db } from "../db/client";
import { providerRefsInUse } from "../sessions/lab-sessions";
import type { MachineProvider } from "../machines/provider";
import { cachedAccel } from "../machines/qemu/accel";
import { findImage } from "../machines/qemu/image";
import { qemuProvider } from "../machines/qemu/provider";
import { recipeByName } from "../machines/images/recipe";
import { SingletonRole } from "../leases/roles";
import { dbHostClaims, loadStaticHosts, staticHostsProvider } from "../machines/static-hosts";
import { KubeApi, loadKubeConfig } from "../machines/kubevirt/cluster";
import { kubevirtProvider, PROVIDER_NAME as KUBEVIRT } from "../machines/kubevirt/provider";
import { setIdOf, WarmPool, type LabPoolTarget, type PoolPreparer, type PoolStatus } from "../machines/warm-pool";
import type { LabCatalog } from "../labs/catalog";
import { runLabSetup } from "../labs/setup";
import { currentLabVersion } from "../labs/versions";
import type { SshExecPool } from "../ssh/exec";

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
export function poolOnOneProcess(
  deps: { db: Db; log: Logger },
  pool: WarmPool,
  options: { host?: string; holder?: string; leaseMs?: number; renewMs?: number } = {},
): SingletonRole {
  const role = new SingletonRole(deps, warmPoolRole(options.host), { start: () => pool.start(), stop: () => pool.stop() }, options);
  role.start();
  return role;
}

export interface Machines {
  provider: MachineProvider;
  kind: "qemu" | "static" | "netns-demo" | "kubevirt";
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

/**
 * The labs' prepared-set targets the pool keeps: PoolTarget rows (admins set them on
 * /admin/capacity) of labs that exist, whose image is built here and that need no internet (pool
 * sets have none).
 */
export async function labPoolTargets(
  db: Db,
  labs: LabCatalog,
  imageBuilt: (variant: string) => Promise<boolean>,
): Promise<LabPoolTarget[]> {
  const rows = await db.poolTarget.findMany({ orderBy: { labSlug: "asc" } });
  const targets: LabPoolTarget[] = [];
  for (const row of rows) {
    if (row.reserve === 0 && row.initial === 0) continue;
    const lab = await labs.get(row.labSlug).catch(() => null);
    if (!lab || lab.manifest.network.internet || !(await imageBuilt(lab.manifest.image))) continue;
    // Prepared hand-outs since the target was last set count against its `initial` (kept in the
    // sessions, so a restart does not make the class's sets again).
    const handedOut =
      row.initial > 0
        ? await db.labSession.count({
            where: { labSlug: lab.slug, startSource: { in: ["prepared", "snapshot"] }, createdAt: { gte: row.updatedAt } },
          })
        : 0;
    targets.push({
      labSlug: lab.slug,
      machines: lab.manifest.machines,
      image: lab.manifest.image,
      reserve: row.reserve,
      initial: row.initial,
      handedOut,
    });
  }
  return targets;
}

/** Runs a lab's setup on a fresh pool set over SSH and saves its start (the QEMU provider's markLabStart). */
export function poolPreparer(db: Db, labs: LabCatalog, exec: SshExecPool, provider: MachineProvider): PoolPreparer {
  return {
    version: async (slug) => (await currentLabVersion(db, labs, slug)).hash,
    async prepare(slug, machines) {
      const { hash, lab } = await currentLabVersion(db, labs, slug);
      const byName = new Map(machines.map((m) => [m.name, m]));
      await runLabSetup(exec, lab, async (name) => byName.get(name) ?? null);
      // No connection of ours stays open into a state that may be saved (a template's restores would hold dead logins).
      for (const m of machines) exec.close(m);
      await provider.markLabStart?.(setIdOf("", machines), machines);
      return hash;
    },
  };
}

/** LABDECK_POOL_LABS as PoolTarget rows, where an admin has not set the lab's target already. */
async function seedPoolTargets(db: Db, targets: Env["LABDECK_POOL_LABS"]): Promise<void> {
  // Created when missing, never touched otherwise: its updatedAt says when `initial` was set.
  for (const t of targets) {
    if (!(await db.poolTarget.findUnique({ where: { labSlug: t.labSlug } })))
      await db.poolTarget.create({ data: t }).catch(() => undefined);
  }
}

export async function startMachines(env: Env, db: Db, log: Logger, labs?: { catalog: LabCatalog; exec: SshExecPool }): Promise<Machines> {
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

  if (kind === "kubevirt") return startKubevirt(env, db, log, labs);

  const image = await findImage(env.LABDECK_DATA_DIR);
  if (!image) {
    log.warn(
      { dataDir: env.LABDECK_DATA_DIR },
      "no lab image yet: run `npm run labdeck -- image build`; labs cannot start until it exists",
    );
  }
  let accel: "kvm" | "tcg" = env.LABDECK_QEMU_ACCEL === "kvm" ? "kvm" : "tcg";
  if (env.LABDECK_QEMU_ACCEL === "auto" && image) {
    const choice = await cachedAccel(env.LABDECK_DATA_DIR, image);
    accel = choice.accel;
    log.info(
      { accel, detail: choice.detail },
      choice.cached ? "QEMU accelerator as a timed boot chose it before" : "QEMU accelerator chosen by a timed boot",
    );
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
  const keep = new Set(live.map((m) => setIdOf(m.sessionId, [m])));
  const report = await qemu.adoptOrCleanup({ keep: (id) => keep.has(id) });
  log.info(report, "QEMU machines recovered after start");

  if (!image) {
    return { kind, provider: qemu, pool: null, reboot: qemu.reboot, stop: async () => {} };
  }
  await seedPoolTargets(db, env.LABDECK_POOL_LABS);
  const imageBuilt = async (variant: string) => (await findImage(env.LABDECK_DATA_DIR, recipeByName(variant)).catch(() => null)) !== null;
  const pool = new WarmPool(qemu, {
    size: env.LABDECK_POOL_SIZE,
    machines: POOL_MACHINES,
    image: POOL_IMAGE,
    log,
    labs: labs && {
      targets: () => labPoolTargets(db, labs.catalog, imageBuilt),
      preparer: poolPreparer(db, labs.catalog, labs.exec, qemu),
    },
  });
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

/**
 * The fleet: lab VMs on a Kubernetes cluster with KubeVirt (server/machines/kubevirt/). Refuses to
 * start, in one sentence, when KubeVirt, CDI or Multus are missing or the account lacks a
 * permission; removes what an earlier process left of sessions the database no longer counts as
 * live; keeps LABDECK_POOL_SIZE sets of the course's three debian-base machines running, and the
 * labs' prepared sets (PoolTarget rows, LABDECK_POOL_LABS) as for QEMU, on one process of the
 * deployment (the sets are in its memory; the role is per namespace, not per host). Every variant
 * counts as built: its image is in the registry, which the provider does not probe.
 */
async function startKubevirt(env: Env, db: Db, log: Logger, labs?: { catalog: LabCatalog; exec: SshExecPool }): Promise<Machines> {
  if (!env.LABDECK_KUBEVIRT_IMAGE_REPOSITORY) {
    throw new Error(
      "LABDECK_MACHINES=kubevirt needs LABDECK_KUBEVIRT_IMAGE_REPOSITORY: the registry path the containerDisk images were pushed to (`labdeck image build --format containerdisk`)",
    );
  }
  const inCluster =
    env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT
      ? { host: env.KUBERNETES_SERVICE_HOST, port: env.KUBERNETES_SERVICE_PORT }
      : undefined;
  const { config, namespace } = loadKubeConfig({
    kubeconfig: env.LABDECK_KUBECONFIG,
    context: env.LABDECK_KUBE_CONTEXT,
    inCluster,
    namespace: env.LABDECK_KUBEVIRT_NAMESPACE,
  });
  const api = new KubeApi(config, namespace);
  const provider = kubevirtProvider({
    api,
    log,
    bootTimeoutMs: env.LABDECK_KUBEVIRT_BOOT_TIMEOUT_S * 1000,
    settings: {
      namespace,
      imageRepository: env.LABDECK_KUBEVIRT_IMAGE_REPOSITORY,
      storageClass: env.LABDECK_KUBEVIRT_STORAGE_CLASS,
      overcommit: { cpu: env.LABDECK_KUBEVIRT_CPU_OVERCOMMIT, memory: env.LABDECK_KUBEVIRT_MEMORY_OVERCOMMIT },
      platformLabels: env.LABDECK_KUBEVIRT_PLATFORM_LABELS,
      nameserver: env.LABDECK_KUBEVIRT_GUEST_DNS,
      internetExcept: env.LABDECK_KUBEVIRT_INTERNET_EXCEPT,
    },
  });
  await provider.preflight();
  const live = await db.machine.findMany({
    where: { session: { provider: KUBEVIRT, state: { not: "ended" } } },
    select: { sessionId: true, providerRef: true },
  });
  const keep = new Set(live.map((m) => setIdOf(m.sessionId, [m])));
  log.info({ namespace, ...(await provider.adoptOrCleanup({ keep: (id) => keep.has(id) })) }, "kubevirt machines recovered after start");
  await seedPoolTargets(db, env.LABDECK_POOL_LABS);
  const pool = new WarmPool(provider, {
    size: env.LABDECK_POOL_SIZE,
    machines: POOL_MACHINES,
    image: POOL_IMAGE,
    log,
    labs: labs && {
      targets: () => labPoolTargets(db, labs.catalog, async () => true),
      preparer: poolPreparer(db, labs.catalog, labs.exec, provider),
    },
  });
  const role = poolOnOneProcess({ db, log }, pool, { host: `kubevirt:${namespace}` });
  return {
    kind: "kubevirt",
    provider: pool,
    pool,
    reboot: provider.reboot,
    stop: async () => {
      await role.stop();
      await pool.stop();
    },
  };
}
