/**
 * What the rest of the server needs from a source of lab machines. Implementations:
 * static-hosts.ts (machines an admin already has), qemu/provider.ts (local VMs),
 * kubevirt/provider.ts (VMs on a cluster), and warm-pool.ts in front of any of them.
 *
 * A machine set is what a provider made for one request: its machines, known to the provider by
 * the request's `sessionId` (the set id). That is a lab session's id, or a warm pool's `pool-…` id
 * that the set keeps after the pool hands it to a learner's session (its machines' providerRef
 * starts with it: warm-pool.ts `setIdOf`). "Session" means only the learner's lab session; the
 * interface keeps its field name `sessionId`.
 */
import type { Worded } from "../worded";
export interface ProvisionedMachine {
  /** Name in the lab: controlplane, node01, ... */
  name: string;
  host: string;
  port: number;
  user: string;
  /** OpenSSH private key text the platform logs in with. */
  privateKey: string;
  /** Host public key pinned at provisioning, OpenSSH one-line format. */
  hostKey: string;
  /** Provider's own handle for the machine (static host group, VM id). */
  providerRef: string;
}

export interface MachineRequest {
  sessionId: string;
  labSlug: string;
  /** Machine names the lab needs, in order. */
  machines: readonly string[];
  /** The lab's image variant (lab.yaml `image`); providers that boot images boot this one. */
  image?: string;
  /**
   * The lab asks for internet access (lab.yaml `network.internet`). Without it machines reach only
   * each other; a provider that cannot give outbound access without the host and private ranges
   * refuses the request.
   */
  internet?: boolean;
  /** Made ahead of need (a warm-pool spare): may boot at lower CPU priority until `promote`. */
  background?: boolean;
}

/** Thrown when the provider has no machines to give right now; its message is shown to the learner. */
export class NoCapacityError extends Error {
  readonly code = "NO_CAPACITY";
  /**
   * @param worded what the learner reads (a key under "errors"); `detail`, in English, is the
   *   error's message for logs and operators.
   */
  constructor(
    readonly worded: Worded,
    detail: string,
  ) {
    super(detail);
  }
}

/**
 * Recognises NoCapacityError by its code: Next.js route handlers load their own copy of this
 * module, so `instanceof` fails across the boundary with server.ts.
 */
export function isNoCapacity(error: unknown): error is NoCapacityError {
  return (error as { code?: unknown } | null)?.code === "NO_CAPACITY";
}

/** A machine as its provider sees it (process level; whether SSH answers is the terminal's business). */
export interface MachineHealth {
  name: string;
  /** running: powered on; stopped: powered off or crashed (reboot brings it back); unknown: the provider has no record. */
  state: "running" | "stopped" | "unknown";
  detail?: string;
}

/** What a provider found of its machines after a platform restart. */
/** What a warm-pool spare was made for: a lab's prepared set (lab and version), or generic (neither). */
export interface SpareRecord {
  labSlug?: string;
  version?: string;
}

/** A spare set found on the host: its set id, machines, and what it was made for. */
export interface SpareSet extends SpareRecord {
  setId: string;
  machines: ProvisionedMachine[];
}

export interface RecoveryReport {
  /** Sets (by id) whose machines run on and are served again. */
  adopted: string[];
  /** Sets (by id) whose leftovers (processes, sockets, disks) were removed. */
  cleaned: string[];
  /** Of the adopted, warm-pool spares nobody was given (the pool offers them again). */
  spares?: string[];
}

export interface MachineProvider {
  /** Stored on each session so a restart knows who owns its machines. */
  readonly name: string;
  /** Provides the machines for a session; throws NoCapacityError when none are free. */
  create(request: MachineRequest): Promise<ProvisionedMachine[]>;
  /**
   * Optional: machines with the request's lab already set up for lab version `labVersion`: a warm
   * pool's prepared set (`prepared`), or a new set started from the lab version's saved template
   * (`snapshot`); null when there is neither. The caller runs no setup on them.
   */
  takePrepared?(
    request: MachineRequest & { labVersion: string },
  ): Promise<{ machines: ProvisionedMachine[]; source: "prepared" | "snapshot" } | null>;
  /**
   * Optional: keeps a set just set up for `labVersion` (a prepared pool set) as the lab
   * version's template, from which `restorePrepared` starts new sets in seconds; the set is
   * consumed (its machines become the template).
   */
  savePrepared?(sessionId: string, machines: readonly ProvisionedMachine[], labVersion: string): Promise<void>;
  /** Optional: a new set of the request's lab from its template for `labVersion`; null when there is no usable template. */
  restorePrepared?(request: MachineRequest & { labVersion: string }): Promise<ProvisionedMachine[] | null>;
  /** Releases a session's machines. Idempotent. */
  destroy(sessionId: string, machines: readonly ProvisionedMachine[]): Promise<void>;
  /** Optional: the state of each of a session's machines, in the order given. */
  health?(sessionId: string, machines: readonly ProvisionedMachine[]): Promise<MachineHealth[]>;
  /**
   * Optional: restarts one machine, keeping its disk: a hard reset when it runs, a fresh start
   * when it was powered off or crashed. Resolves when it answers SSH again.
   */
  reboot?(sessionId: string, machine: ProvisionedMachine): Promise<void>;
  /**
   * Optional: puts one machine back to the lab's start, keeping its name, address, keys and
   * endpoint; resolves when it answers SSH. `atLabStart`: the provider restored a state saved after
   * the lab's setup (markLabStart); otherwise the machine is at its first boot (a fresh disk) and
   * the caller runs the lab's setup again.
   */
  reset?(sessionId: string, machine: ProvisionedMachine): Promise<{ atLabStart: boolean }>;
  /**
   * Optional: the session's machines have just been set up for their lab: a provider that can
   * save machine states keeps this one, so `reset` returns to it without booting or setting up.
   */
  markLabStart?(sessionId: string, machines: readonly ProvisionedMachine[]): Promise<void>;
  /**
   * Optional: gives background-made machines normal priority and ends their spare record (a
   * learner got them): from then on only the database says whose they are.
   */
  promote?(sessionId: string, machines: readonly ProvisionedMachine[]): Promise<void>;
  /**
   * Optional: records a ready set as a warm-pool spare nobody was given yet (`labSlug` and
   * `version` for a prepared set), so that a restart, a crash or a clean stop keeps it and `spares`
   * offers it again instead of booting a new one.
   */
  keepSpare?(sessionId: string, machines: readonly ProvisionedMachine[], spare: SpareRecord): Promise<void>;
  /**
   * Optional: every spare set kept on this host that runs (ones an earlier process made included),
   * served by this process from now on; `except` names sets the caller holds already.
   */
  spares?(except: ReadonlySet<string>): Promise<SpareSet[]>;
  /**
   * Optional: the session these machines were created for is set up (or gave up): work the
   * provider held back so as not to compete with it for the CPU (a warm pool's refill) may start.
   */
  sessionSettled?(sessionId: string, machines: readonly ProvisionedMachine[]): void;
  /**
   * Optional: powers a session's machines off to free the host (an idle learner), keeping their
   * disks, keys and addresses. Idempotent. `resume` brings them back.
   */
  suspend?(sessionId: string, machines: readonly ProvisionedMachine[]): Promise<void>;
  /**
   * Optional: powers a suspended session's machines on again; resolves when every machine answers
   * SSH, with the machines as they are now (an SSH port may have moved). Throws NoCapacityError
   * when the host has no room for them right now.
   */
  resume?(sessionId: string, machines: readonly ProvisionedMachine[]): Promise<ProvisionedMachine[]>;
  /**
   * Optional, called once at platform start: finds machines an earlier platform process left
   * running, serves them again or removes them. Sets for which `keep` returns false (their
   * session ended in the database) are removed.
   */
  adoptOrCleanup?(options?: { keep?: (sessionId: string) => boolean }): Promise<RecoveryReport>;
}
