/**
 * What the QEMU provider's parts share (provider.ts builds it): the sessions this process serves
 * and the helpers every lifecycle step uses. saved-states.ts, template-sets.ts and recovery.ts
 * take it, so each lifecycle concern lives in its own file over one set of runtimes.
 */
import type { Logger } from "pino";
import type { NoCapacityError, ProvisionedMachine } from "../provider";
import type { SshExecPool } from "../../ssh/exec";
import type { SshEndpoint } from "../../ssh/connect";
import type { CapacityCheck } from "./capacity";
import type { BuiltImage } from "./image";
import type { SessionState, VmRecord } from "./state";
import type { Accel, VmProcess } from "./vm";

/** A session this process serves: its state and handles on its live QEMU processes. */
export interface Runtime {
  dir: string;
  state: SessionState;
  vms: Map<string, VmProcess>;
  destroying: boolean;
}

export interface QemuCore {
  readonly dataDir: string;
  readonly image?: Pick<BuiltImage, "base" | "kernel" | "initrd">;
  readonly imageFor?: (variant: string) => Promise<Pick<BuiltImage, "base" | "kernel" | "initrd"> | null>;
  readonly accel: Accel;
  readonly log: Logger;
  /** SSH exec for the fix-ups of restored machines. */
  readonly exec: SshExecPool;
  readonly bootTimeoutMs: number;
  readonly runtimes: Map<string, Runtime>;
  /** One operation at a time per session, in call order. */
  serialised<T>(sessionId: string, fn: () => Promise<T>): Promise<T>;
  /** A capacity check and the spawn it allows, one at a time over the provider. */
  withCapacity<T>(fn: () => Promise<T>): Promise<T>;
  /** Memory the tracked VMs will still grow into, MiB. */
  committedMiB(): Promise<number>;
  noCapacity(sessionId: string, check: CapacityCheck): NoCapacityError;
  save(runtime: Runtime): Promise<void>;
  endpointOf(state: SessionState, record: VmRecord): SshEndpoint;
  provisioned(state: SessionState): ProvisionedMachine[];
  /** Tracks a started VM (its exit is logged unless expected). */
  watch(runtime: Runtime, vm: VmProcess): void;
  /** An internet session's namespace and table, made or refreshed. */
  ensureEgress(runtime: Runtime): Promise<void>;
  startRecord(
    runtime: Runtime,
    record: VmRecord,
    reusePort: boolean,
    nice?: number,
    loadvm?: string,
    incoming?: string,
  ): Promise<VmProcess>;
  runtimeOrThrow(sessionId: string): Promise<Runtime>;
  /** Session id behind a set of machines (a pooled set keeps the pool's id in its providerRef). */
  sessionOf(sessionId: string, machines: readonly ProvisionedMachine[]): string;
  /** Removes a session completely (processes, switch, namespace, directory). */
  teardown(sessionId: string): Promise<void>;
}
