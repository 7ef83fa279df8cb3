/**
 * What the rest of the server needs from a source of lab machines. Implementations:
 * static-hosts.ts (machines an admin already has); the local QEMU provider comes next.
 */
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
}

/** Thrown when the provider has no machines to give right now; its message is shown to the learner. */
export class NoCapacityError extends Error {
  readonly code = "NO_CAPACITY";
}

/**
 * Recognises NoCapacityError by its code: Next.js route handlers load their own copy of this
 * module, so `instanceof` fails across the boundary with server.ts.
 */
export function isNoCapacity(error: unknown): error is NoCapacityError {
  return (error as { code?: unknown } | null)?.code === "NO_CAPACITY";
}

export interface MachineProvider {
  /** Stored on each session so a restart knows who owns its machines. */
  readonly name: string;
  /** Provides the machines for a session; throws NoCapacityError when none are free. */
  create(request: MachineRequest): Promise<ProvisionedMachine[]>;
  /** Releases a session's machines. Idempotent. */
  destroy(sessionId: string, machines: readonly ProvisionedMachine[]): Promise<void>;
}
