/**
 * Warm-pool spares on this host (QEMU provider): a ready set nobody was given carries a spare
 * record in its state, so a restart, a crash or a clean stop keeps it (recovery.ts adopts it
 * although no session names it) and the pool offers it again instead of booting a new one. A
 * learner's hand-out ends the record (promote, lifecycle.ts) before the database names the set.
 */
import type { ProvisionedMachine, SpareRecord, SpareSet } from "../provider";
import { provisioned } from "./machine-set";
import { adoptSpare } from "./recovery";
import type { QemuRuntime } from "./runtime";
import { listSetDirs, readState, setDir, writeState } from "./state";

export async function keepSpare(
  runtime: QemuRuntime,
  sessionId: string,
  machines: readonly ProvisionedMachine[],
  spare: SpareRecord,
): Promise<void> {
  const id = runtime.setIdOf(sessionId, machines);
  await runtime.serialised(id, async () => {
    const set = runtime.setOrThrow(id);
    set.state.spare = { labSlug: spare.labSlug, version: spare.version };
    await writeState(set.dir, set.state);
  });
}

/**
 * Every running spare of this data directory: ready spares this process serves or an earlier or
 * another process made (adopted here first), except the sets in `except`. The state on disk
 * decides, not this process's copy: another process may have handed a set out since.
 */
export async function spares(runtime: QemuRuntime, except: ReadonlySet<string>): Promise<SpareSet[]> {
  const found: SpareSet[] = [];
  for (const id of await listSetDirs(runtime.dataDir)) {
    if (except.has(id)) continue;
    const spare = await runtime.serialised(id, () => spareOnDisk(runtime, id));
    if (spare) found.push(spare);
  }
  return found;
}

async function spareOnDisk(runtime: QemuRuntime, id: string): Promise<SpareSet | null> {
  const dir = setDir(runtime.dataDir, id);
  const read = await readState(dir);
  const onDisk = "state" in read ? read.state : null;
  const served = runtime.sets.get(id);
  if (served && !onDisk?.spare) delete served.state.spare;
  if (!onDisk?.spare || onDisk.phase !== "ready") return null;
  if (!served && !(await adoptSpare(runtime, dir, onDisk))) return null;
  const set = runtime.sets.get(id);
  if (!set?.state.spare || set.destroying || set.vms.size !== set.state.vms.length) return null;
  if ([...set.vms.values()].some((vm) => vm.hasExited())) return null;
  return { setId: id, machines: provisioned(set.state), ...set.state.spare };
}
