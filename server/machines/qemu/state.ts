/**
 * A machine set's record on disk (machine-set.ts says what a set is),
 * `<dataDir>/sessions/<setId>/state.json`: everything a later platform process needs to find the
 * set's processes again (pids, sockets, ports, keys) and either adopt or remove them. Written
 * atomically (temp file + rename) at every step of a set's life, before the step's effects can
 * outlive a crash. The folder keeps its name `sessions` so that sets of earlier versions are found.
 */
import fs from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { EgressRecord } from "./egress";

const STATE_FILE = "state.json";
/** Bumped when the layout changes; a state file of another version is cleaned up, never adopted. */
export const STATE_VERSION = 1;

/** Set ids become directory names: no separators, no dots, bounded for unix socket paths. */
export const SetId = z.string().regex(/^[A-Za-z0-9_-]{1,40}$/, "must be 1-40 characters A-Z a-z 0-9 _ -");

export const VmRecord = z.object({
  name: z.string(),
  dir: z.string(),
  /** QEMU's pid; 0 until started. */
  pid: z.number().int().min(0),
  sshPort: z.number().int().min(1).max(65535),
  eth1Address: z.string(),
  eth1Mac: z.string(),
  hostPublicKey: z.string(),
  machineId: z.string(),
  uuid: z.string(),
  /**
   * Internal snapshots in the VM's overlay (snapshots.ts): `lab-start` (the lab's setup done, the
   * state a reset returns to), `suspended` (the running state a suspend saved; resume restores it).
   */
  snapshots: z.array(z.string()).default([]),
});
export type VmRecord = z.infer<typeof VmRecord>;

export const SetState = z.object({
  version: z.literal(STATE_VERSION),
  /** The set's id (the `sessionId` of the request that made it; the field keeps that name on disk). */
  sessionId: SetId,
  labSlug: z.string(),
  /**
   * starting: create in progress; ready: handed out; suspended: VMs powered off on purpose (an
   * idle learner), disks kept for resume; destroying: destroy in progress.
   */
  phase: z.enum(["starting", "ready", "suspended", "destroying"]),
  /** The process that created the set; a "starting" set whose creator lives is not a leftover. */
  creatorPid: z.number().int().min(1),
  createdAt: z.string(),
  image: z.object({ base: z.string(), kernel: z.string(), initrd: z.string() }),
  memoryMiB: z.number().int(),
  /** The template (templates.ts) whose disks the VMs' overlays stand on, when started from one. */
  template: z.string().optional(),
  /** The QEMU build and accelerator that wrote the VMs' snapshots (snapshots.ts `snapshotHost`); others ignore them. */
  snapshotHost: z.string().optional(),
  /** Virtual CPUs per VM (the image variant's size, recipe.ts). */
  vcpus: z.number().int().min(1).default(1),
  accel: z.enum(["tcg", "kvm"]),
  /** The set's SSH client key (OpenSSH text); the file is mode 0600 in a 0700 directory. */
  clientKey: z.object({ privateKey: z.string(), publicKey: z.string() }),
  switch: z.object({ socket: z.string(), pidFile: z.string(), pid: z.number().int().min(0) }),
  /**
   * A warm-pool spare nobody was given yet (what it was made for); cleared when a learner gets
   * it (promote). A restart adopts a ready spare although no session names it.
   */
  spare: z.object({ labSlug: z.string().optional(), version: z.string().optional() }).optional(),
  /** The lab asks for the internet: the VMs run in the set's network namespace (egress.ts). */
  internet: z.boolean().default(false),
  /** That namespace and its veth, once made (a host reboot removes them; resume makes them again). */
  egress: EgressRecord.optional(),
  vms: z.array(VmRecord),
});
export type SetState = z.infer<typeof SetState>;

/** The folder of every machine set of a data directory. */
export function setsDir(dataDir: string): string {
  return path.join(path.resolve(dataDir), "sessions");
}

export function setDir(dataDir: string, setId: string): string {
  return path.join(setsDir(dataDir), SetId.parse(setId));
}

export async function writeState(dir: string, state: SetState): Promise<void> {
  const file = path.join(dir, STATE_FILE);
  const temp = `${file}.tmp`;
  await fs.writeFile(temp, JSON.stringify(SetState.parse(state), null, 2) + "\n", { mode: 0o600 });
  await fs.rename(temp, file);
}

/** The set's state, or an error message saying why there is none usable. */
export async function readState(dir: string): Promise<{ state: SetState } | { error: string }> {
  const file = path.join(dir, STATE_FILE);
  let raw: unknown;
  try {
    raw = JSON.parse(await fs.readFile(file, "utf8"));
  } catch (error) {
    return { error: `${file}: ${(error as Error).message}` };
  }
  const parsed = SetState.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { error: `${file}: ${issue.path.join(".") || "(root)"}: ${issue.message}` };
  }
  return { state: parsed.data };
}

/** Set ids that have a directory under `<dataDir>/sessions`. */
export async function listSetDirs(dataDir: string): Promise<string[]> {
  const entries = await fs.readdir(setsDir(dataDir), { withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isDirectory() && SetId.safeParse(e.name).success).map((e) => e.name);
}
