/**
 * The KubeVirt machine provider: a lab session's machines as VirtualMachines in one namespace of a
 * Kubernetes cluster (manifests.ts), reached over SSH at each VM's Service address from inside the
 * cluster, with keys Labdeck made for the session and host keys it pinned before the first boot.
 *
 *   create   quota check → golden PVC ensured → NAD, NetworkPolicy, per machine Secret + Service +
 *            VirtualMachine → start → VMIs Running (watch) → SSH answers with the pinned key
 *   reboot   running: restart subresource, grace 0 (a hard reset; the disk stays); off: start
 *   reset    the VirtualMachine deleted with its root disk (foreground) and made again from its own
 *            spec: a fresh clone, the same Secret (name, keys, addresses) and Service
 *   suspend  stop subresource (ACPI, then killed after the grace); resume: start again
 *   destroy  every object with the session's label
 *   adopt    after a restart: sessions the database keeps are served again, the rest deleted
 *
 * Everything a later process needs is in the cluster (labels, annotations, the Secret), none of it
 * in this process: any replica can destroy, reboot or adopt any session.
 */
import type { Logger } from "pino";
import { z } from "zod";
import { Client } from "ssh2";
import { hostKeyBlob } from "../../ssh/connect";
import {
  NoCapacityError,
  type MachineHealth,
  type MachineProvider,
  type MachineRequest,
  type ProvisionedMachine,
  type RecoveryReport,
} from "../provider";
import { generateEd25519 } from "../keys";
import { recipeByName } from "../images/recipe";
import { QuotaExceededError, quotaShortfalls, type SessionUsage } from "./capacity";
import { KubeApi, KubePermissionError, KubeResourceMissingError, RESOURCES } from "./cluster";
import { containerDiskImageHash } from "./containerdisk-recipe";
import {
  ALL_SESSIONS_SELECTOR,
  ANNOTATION_SESSION_ID,
  goldenDataVolume,
  quotaUsage,
  sessionObjects,
  sessionSelector,
  SSH_PORT,
  vmName,
  type FleetSettings,
  type KubeObject,
} from "./manifests";

export const PROVIDER_NAME = "kubevirt";
/** The variant a request without `image` boots. */
const DEFAULT_VARIANT = "debian-base";
/**
 * How long a VM may take from create to answering SSH, ms: a CDI clone of the golden PVC (seconds
 * with a CSI clone, minutes with a host-assisted copy), pulling the kernel image once per node,
 * scheduling and a KVM boot (~10-20 s). Generous; the pool hides it from learners.
 */
export const BOOT_TIMEOUT_MS = 10 * 60_000;
/** One SSH probe's limit while waiting for a VM, ms (a booting guest's Service refuses or times out). */
const SSH_PROBE_TIMEOUT_MS = 10_000;
/** Pause between SSH probes and between polls of an object's deletion, ms. */
const RETRY_PAUSE_MS = 500;
/** Most machines one session may ask for (as the QEMU provider). */
const MAX_MACHINES = 8;
const MACHINE_NAME = /^[a-z][a-z0-9-]{0,30}$/;

export interface KubevirtProviderOptions {
  api: KubeApi;
  settings: FleetSettings;
  log: Logger;
  /** Recipe hash of a variant's containerDisk image; default: the fleet recipe's (containerdisk-recipe.ts). */
  imageHash?: (variant: string) => string;
  /** Create-to-SSH limit per session, ms. */
  bootTimeoutMs?: number;
}

export interface KubevirtProvider extends MachineProvider {
  health(sessionId: string, machines: readonly ProvisionedMachine[]): Promise<MachineHealth[]>;
  reboot(sessionId: string, machine: ProvisionedMachine): Promise<void>;
  reset(sessionId: string, machine: ProvisionedMachine): Promise<{ atLabStart: boolean }>;
  suspend(sessionId: string, machines: readonly ProvisionedMachine[]): Promise<void>;
  resume(sessionId: string, machines: readonly ProvisionedMachine[]): Promise<ProvisionedMachine[]>;
  adoptOrCleanup(options?: { keep?: (sessionId: string) => boolean }): Promise<RecoveryReport>;
  /** Refuses to start when KubeVirt, CDI or Multus are missing or the account lacks a permission; one sentence each. */
  preflight(): Promise<void>;
}

const Meta = z.looseObject({
  name: z.string(),
  uid: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
});
const Condition = z.looseObject({ type: z.string(), status: z.string(), reason: z.string().optional(), message: z.string().optional() });
/** What the provider reads of a VirtualMachineInstance (kubevirt.io/v1 VirtualMachineInstanceStatus). */
const Vmi = z.looseObject({
  metadata: Meta,
  status: z
    .looseObject({ phase: z.string().optional(), conditions: z.array(Condition).optional(), nodeName: z.string().optional() })
    .optional(),
});
type Vmi = z.infer<typeof Vmi>;
const Named = z.looseObject({ metadata: Meta });
const ServiceAnswer = z.looseObject({ spec: z.looseObject({ clusterIP: z.string().min(1) }) });

/** VMI phases after which the guest is gone (a poweroff, a crash, a stop). */
const FINAL_PHASES = new Set(["Succeeded", "Failed"]);

export function kubevirtProvider(options: KubevirtProviderOptions): KubevirtProvider {
  const { api, settings } = options;
  const log = options.log.child({ provider: PROVIDER_NAME, namespace: api.namespace });
  const bootTimeoutMs = options.bootTimeoutMs ?? BOOT_TIMEOUT_MS;
  const imageHash = options.imageHash ?? ((variant: string) => containerDiskImageHash(recipeByName(variant)));
  /** Golden images this process made sure of, by DataVolume name. */
  const golden = new Set<string>();
  /** One lifecycle operation at a time per session (create, reboot, reset, suspend, destroy). */
  const locks = new Map<string, Promise<unknown>>();

  function serialised<T>(sessionId: string, fn: () => Promise<T>): Promise<T> {
    const next = (locks.get(sessionId) ?? Promise.resolve()).catch(() => undefined).then(fn);
    locks.set(sessionId, next);
    void next
      .finally(() => {
        if (locks.get(sessionId) === next) locks.delete(sessionId);
      })
      .catch(() => undefined);
    return next;
  }

  async function checkQuota(variant: string, machines: number): Promise<void> {
    const per = quotaUsage(settings, variant);
    const usage: SessionUsage = {
      cpuMilli: per.cpuMilli * machines,
      memoryMiB: per.memoryMiB * machines,
      storageGiB: per.storageGiB * machines,
      machines,
    };
    const short = quotaShortfalls(await api.list("resourceQuotas"), usage);
    if (short.length > 0) throw new QuotaExceededError(short.join("; "));
  }

  async function ensureGolden(variant: string, hash: string): Promise<void> {
    const dv = goldenDataVolume(settings, variant, hash);
    if (golden.has(dv.metadata.name)) return;
    await api.create("dataVolumes", dv, { alreadyExists: "ok" });
    golden.add(dv.metadata.name);
  }

  /**
   * Watches the session's VMIs until `ready` holds for every machine name; throws what `ready`
   * throws (a refused pod), or after the deadline with the last state seen.
   */
  async function waitForVmis(
    sessionId: string,
    names: readonly string[],
    ready: (vmi: Vmi | undefined, name: string) => boolean,
    deadline: number,
    what: string,
  ): Promise<void> {
    const state = new Map<string, Vmi>();
    const done = () => names.every((name) => ready(state.get(vmName(sessionId, name)), name));
    let failure: unknown = null;
    const check = (): boolean => {
      try {
        return done();
      } catch (error) {
        failure = error;
        return true;
      }
    };
    while (Date.now() < deadline) {
      const { items, resourceVersion } = await api.listWithVersion("virtualMachineInstances", sessionSelector(sessionId));
      state.clear();
      for (const item of items) {
        const vmi = Vmi.safeParse(item);
        if (vmi.success) state.set(vmi.data.metadata.name, vmi.data);
      }
      if (check()) break;
      const abort = new AbortController();
      const timer = setTimeout(() => abort.abort(), Math.max(0, deadline - Date.now()));
      await api
        .watch("virtualMachineInstances", { labelSelector: sessionSelector(sessionId), resourceVersion, signal: abort.signal }, (event) => {
          const vmi = Vmi.safeParse(event.object);
          if (!vmi.success) return;
          if (event.type === "DELETED") state.delete(vmi.data.metadata.name);
          else if (event.type === "ADDED" || event.type === "MODIFIED") state.set(vmi.data.metadata.name, vmi.data);
          if (check()) abort.abort();
        })
        .catch((error: Error) => {
          if (!abort.signal.aborted) log.debug({ err: error.message }, "VMI watch ended; listing again");
        })
        .finally(() => clearTimeout(timer));
      if (abort.signal.aborted && (failure || done())) break;
    }
    if (failure) throw failure;
    if (!done()) {
      const seen = names.map((n) => `${n}: ${describe(state.get(vmName(sessionId, n)))}`).join("; ");
      if (/Unschedulable|Insufficient/i.test(seen))
        throw new NoCapacityError(`ラボ用マシンを置けるノードがありません(クラスターの空き不足)。しばらくしてからもう一度お試しください。`);
      throw new Error(`${what}: not done within ${Math.round(bootTimeoutMs / 1000)} s (${seen})`);
    }
  }

  /** Running, and not a VMI from before (`previous` uids): what a start, restart or resume waits for. */
  function running(previous: ReadonlyMap<string, string | undefined> = new Map()) {
    return (vmi: Vmi | undefined, name: string): boolean => {
      if (!vmi) return false;
      refuseQuota(vmi);
      if (previous.get(name) !== undefined && previous.get(name) === vmi.metadata.uid) return false;
      if (vmi.status?.phase === "Failed") throw new Error(`${name}: the VM failed to start (${describe(vmi)})`);
      return vmi.status?.phase === "Running";
    };
  }

  /**
   * Waits until each machine's sshd presents the host key Labdeck pinned (so cloud-init has run
   * and sshd is up). No login: the machines handed to reboot, reset and resume come from the
   * database, whose private keys are sealed (sessions/machine-keys.ts), and the provider keeps no
   * copy; the lab's setup and the terminals log in right after.
   */
  async function waitForSsh(
    endpoints: readonly Pick<ProvisionedMachine, "name" | "host" | "port" | "hostKey">[],
    deadline: number,
  ): Promise<void> {
    await Promise.all(
      endpoints.map(async (endpoint) => {
        let last = "no attempt";
        while (Date.now() < deadline) {
          try {
            await presentsHostKey(endpoint, Math.min(SSH_PROBE_TIMEOUT_MS, Math.max(1, deadline - Date.now())));
            return;
          } catch (error) {
            last = (error as Error).message;
          }
          await sleep(RETRY_PAUSE_MS);
        }
        throw new Error(
          `${endpoint.name}: SSH at ${endpoint.host}:${endpoint.port} did not answer with the pinned host key in time (last: ${last})`,
        );
      }),
    );
  }

  async function uids(sessionId: string, names: readonly string[]): Promise<Map<string, string | undefined>> {
    const found = await Promise.all(
      names.map(async (name) => [name, Vmi.safeParse(await api.get("virtualMachineInstances", vmName(sessionId, name)))] as const),
    );
    return new Map(found.map(([name, vmi]) => [name, vmi.success ? vmi.data.metadata.uid : undefined]));
  }

  /** Deletes every object of the session (by label); idempotent. */
  async function destroySession(sessionId: string): Promise<void> {
    const selector = sessionSelector(sessionId);
    // VMs first: their VMIs, pods and root disks go with them (owner references). A kind whose API
    // is not served has no objects (a start that failed on it); the others are still deleted.
    const failures: Error[] = [];
    for (const resource of ["virtualMachines", "services", "secrets", "networkPolicies", "networkAttachmentDefinitions"] as const) {
      try {
        const items = await api.list(resource, selector);
        await Promise.all(items.map((item) => api.delete(resource, Named.parse(item).metadata.name)));
      } catch (error) {
        if (!(error instanceof KubeResourceMissingError)) failures.push(error as Error);
      }
    }
    if (failures.length > 0) throw failures[0];
  }

  async function createSession(request: MachineRequest): Promise<ProvisionedMachine[]> {
    const started = Date.now();
    const deadline = started + bootTimeoutMs;
    if (request.machines.length === 0 || request.machines.length > MAX_MACHINES)
      throw new Error(`a session needs 1..${MAX_MACHINES} machines`);
    for (const name of request.machines)
      if (!MACHINE_NAME.test(name)) throw new Error(`machine name ${JSON.stringify(name)} must match ${MACHINE_NAME}`);
    const variant = request.image ?? DEFAULT_VARIANT;
    const hash = imageHash(variant);
    await checkQuota(variant, request.machines.length);

    const clientKey = generateEd25519(`labdeck-${request.sessionId}`);
    const hostKeys = request.machines.map((name) => ({ name, ...generateEd25519(name) }));
    const objects = sessionObjects(settings, {
      sessionId: request.sessionId,
      labSlug: request.labSlug,
      variant,
      imageHash: hash,
      internet: request.internet ?? false,
      machines: hostKeys.map((k) => ({ name: k.name, hostPrivateKey: k.privateKey, hostPublicKey: k.publicKey })),
      authorizedKeys: `${clientKey.publicKey} labdeck-${request.sessionId}\n`,
    });
    try {
      await ensureGolden(variant, hash);
      await api.create("networkAttachmentDefinitions", objects.network);
      await api.create("networkPolicies", objects.policy);
      const machines = await Promise.all(
        objects.machines.map(async (m, i): Promise<ProvisionedMachine> => {
          await api.create("secrets", m.secret);
          const service = ServiceAnswer.parse(await api.create("services", m.service));
          await api.create("virtualMachines", m.vm);
          await api.vmAction(m.vm.metadata.name, "start");
          return {
            name: m.name,
            host: service.spec.clusterIP,
            port: SSH_PORT,
            user: "root",
            privateKey: clientKey.privateKey,
            hostKey: hostKeys[i]!.publicKey,
            providerRef: `${request.sessionId}/${m.name}`,
          };
        }),
      );
      const created = Date.now();
      await waitForVmis(request.sessionId, request.machines, running(), deadline, `session ${request.sessionId}: VMs running`);
      const runningAt = Date.now();
      await waitForSsh(machines, deadline);
      log.info(
        {
          sessionId: request.sessionId,
          variant,
          machines: request.machines.length,
          apiMs: created - started,
          runningMs: runningAt - created,
          sshMs: Date.now() - runningAt,
        },
        "kubevirt machines ready",
      );
      return machines;
    } catch (error) {
      await destroySession(request.sessionId).catch((cleanup: Error) =>
        log.warn({ sessionId: request.sessionId, err: cleanup.message }, "cleanup after a failed create"),
      );
      if (error instanceof QuotaExceededError)
        log.info({ sessionId: request.sessionId, detail: error.detail }, "kubevirt: no room in the namespace quota");
      throw error;
    }
  }

  async function vmObject(sessionId: string, name: string): Promise<KubeObject> {
    const vm = await api.get("virtualMachines", vmName(sessionId, name));
    if (!vm) throw new Error(`machine ${name} of session ${sessionId} has no VirtualMachine`);
    return vm as KubeObject;
  }

  async function waitGone(resource: "virtualMachines", name: string, deadline: number): Promise<void> {
    while ((await api.get(resource, name)) !== null) {
      if (Date.now() > deadline) throw new Error(`${name} was not deleted in time`);
      await sleep(RETRY_PAUSE_MS);
    }
  }

  return {
    name: PROVIDER_NAME,

    async preflight() {
      const problems: string[] = [];
      for (const resource of ["virtualMachines", "dataVolumes", "networkAttachmentDefinitions"] as const) {
        if (!(await api.serves(resource))) problems.push(RESOURCES[resource].missing);
      }
      if (problems.length === 0) {
        const denied = await api.missingAccess();
        if (denied.length > 0) {
          problems.push(
            new KubePermissionError(
              `Labdeck's Kubernetes account lacks ${denied.join(", ")} in namespace ${api.namespace}: apply the Role in deploy/kubernetes/base/rbac.yaml to it`,
            ).message,
          );
        }
      }
      if (problems.length > 0) throw new Error([...new Set(problems)].join("; "));
    },

    create(request) {
      return serialised(request.sessionId, () => createSession(request));
    },

    destroy(sessionId) {
      return serialised(sessionId, () => destroySession(sessionId));
    },

    async health(sessionId, machines) {
      return Promise.all(
        machines.map(async (m): Promise<MachineHealth> => {
          const vmi = Vmi.safeParse(await api.get("virtualMachineInstances", vmName(sessionId, m.name)));
          if (vmi.success && !FINAL_PHASES.has(vmi.data.status?.phase ?? ""))
            return { name: m.name, state: "running", detail: vmi.data.status?.phase };
          if (vmi.success || (await api.get("virtualMachines", vmName(sessionId, m.name))) !== null) {
            return { name: m.name, state: "stopped", detail: vmi.success ? vmi.data.status?.phase : "no instance" };
          }
          return { name: m.name, state: "unknown", detail: "no VirtualMachine" };
        }),
      );
    },

    reboot(sessionId, machine) {
      return serialised(sessionId, async () => {
        const deadline = Date.now() + bootTimeoutMs;
        const name = vmName(sessionId, machine.name);
        const before = await uids(sessionId, [machine.name]);
        const vmi = Vmi.safeParse(await api.get("virtualMachineInstances", name));
        const alive = vmi.success && !FINAL_PHASES.has(vmi.data.status?.phase ?? "");
        // A hard reset of a running guest (grace 0: the disk keeps what reached it, as QEMU's
        // system_reset); a powered-off or crashed one is started again.
        await api.vmAction(name, alive ? "restart" : "start", alive ? { gracePeriodSeconds: 0 } : {});
        await waitForVmis(sessionId, [machine.name], running(before), deadline, `${machine.name}: back after a reboot`);
        await waitForSsh([machine], deadline);
      });
    },

    reset(sessionId, machine) {
      return serialised(sessionId, async () => {
        const deadline = Date.now() + bootTimeoutMs;
        const vm = await vmObject(sessionId, machine.name);
        const name = vm.metadata.name;
        // Foreground: the VM object stays until its VMI and root DataVolume are gone, so the new VM
        // below clones a fresh disk rather than finding the old one.
        await api.delete("virtualMachines", name, { foreground: true });
        await waitGone("virtualMachines", name, deadline);
        await api.create("virtualMachines", {
          apiVersion: vm.apiVersion,
          kind: vm.kind,
          metadata: { name, namespace: api.namespace, labels: vm.metadata.labels, annotations: vm.metadata.annotations },
          spec: vm.spec,
        });
        await api.vmAction(name, "start");
        await waitForVmis(sessionId, [machine.name], running(), deadline, `${machine.name}: back after a reset`);
        await waitForSsh([machine], deadline);
        // A fresh clone at its first boot: the caller runs the lab's setup again (no saved lab start here).
        return { atLabStart: false };
      });
    },

    suspend(sessionId, machines) {
      return serialised(sessionId, async () => {
        const deadline = Date.now() + bootTimeoutMs;
        const names = machines.map((m) => m.name);
        const state = await uids(sessionId, names);
        await Promise.all(
          names.filter((n) => state.get(n) !== undefined).map((n) => api.vmAction(vmName(sessionId, n), "stop").catch(ignoreNotRunning)),
        );
        await waitForVmis(
          sessionId,
          names,
          (vmi) => vmi === undefined || FINAL_PHASES.has(vmi.status?.phase ?? ""),
          deadline,
          `session ${sessionId}: VMs stopped`,
        );
      });
    },

    resume(sessionId, machines) {
      return serialised(sessionId, async () => {
        const deadline = Date.now() + bootTimeoutMs;
        const names = machines.map((m) => m.name);
        const variant = (await vmObject(sessionId, names[0]!)).metadata.labels?.["labdeck.io/variant"] ?? DEFAULT_VARIANT;
        const before = await uids(sessionId, names);
        const stopped = names.filter((n) => before.get(n) === undefined);
        if (stopped.length > 0) await checkQuota(variant, stopped.length);
        await Promise.all(stopped.map((n) => api.vmAction(vmName(sessionId, n), "start")));
        await waitForVmis(sessionId, names, running(), deadline, `session ${sessionId}: VMs running again`);
        await waitForSsh(machines, deadline);
        // The Services keep their addresses: the machines are what they were.
        return [...machines];
      });
    },

    async adoptOrCleanup(options = {}) {
      const keep = options.keep ?? (() => true);
      const sessions = new Set<string>();
      for (const resource of ["virtualMachines", "secrets", "services", "networkPolicies", "networkAttachmentDefinitions"] as const) {
        for (const item of await api.list(resource, ALL_SESSIONS_SELECTOR)) {
          const id = Named.parse(item).metadata.annotations?.[ANNOTATION_SESSION_ID];
          if (id) sessions.add(id);
        }
      }
      const report: RecoveryReport = { adopted: [], cleaned: [] };
      for (const id of sessions) {
        if (keep(id)) report.adopted.push(id);
        else {
          await destroySession(id);
          report.cleaned.push(id);
        }
      }
      return report;
    },
  };
}

/** A stop of a VM that is not running answers 409 (Conflict); for suspend that is done already. */
function ignoreNotRunning(error: unknown): void {
  if ((error as { status?: number }).status === 409) return;
  throw error;
}

/** A refused virt-launcher pod ("exceeded quota") ends the wait at once. */
function refuseQuota(vmi: Vmi): void {
  for (const condition of vmi.status?.conditions ?? []) {
    if (condition.status === "False" && /exceeded quota/i.test(condition.message ?? ""))
      throw new QuotaExceededError(`${vmi.metadata.name}: ${condition.message}`);
  }
}

function describe(vmi: Vmi | undefined): string {
  if (!vmi) return "no instance";
  const problems = (vmi.status?.conditions ?? [])
    .filter((c) => c.status === "False" && c.reason)
    .map((c) => `${c.type} ${c.reason}: ${c.message ?? ""}`.trim());
  return [vmi.status?.phase ?? "no phase", ...problems].join(", ");
}

/**
 * One SSH handshake up to the host key: resolves when the server presents `hostKey`, rejects when
 * it presents another, does not answer in time or closes. The handshake is abandoned there (the
 * verifier refuses), so nothing logs in.
 */
export function presentsHostKey(endpoint: Pick<ProvisionedMachine, "host" | "port" | "hostKey">, timeoutMs: number): Promise<void> {
  const pinned = hostKeyBlob(endpoint.hostKey);
  return new Promise((resolve, reject) => {
    const client = new Client();
    let verdict: "pinned" | "other" | null = null;
    let settled = false;
    const finish = (error?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      client.end();
      if (verdict === "pinned") resolve();
      else
        reject(
          verdict === "other"
            ? new Error("the server presents another host key than the pinned one")
            : (error ?? new Error("closed before a host key")),
        );
    };
    const timer = setTimeout(() => finish(new Error(`no SSH host key within ${timeoutMs} ms`)), timeoutMs);
    client.on("error", (error) => finish(error));
    client.on("close", () => finish());
    client.connect({
      host: endpoint.host,
      port: endpoint.port,
      username: "root",
      readyTimeout: timeoutMs,
      hostVerifier: (key: Buffer) => {
        verdict = key.equals(pinned) ? "pinned" : "other";
        setImmediate(() => finish());
        return false;
      },
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
