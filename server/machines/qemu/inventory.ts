/**
 * What machine sets a QEMU data directory holds, read from this process's memory or from disk
 * (for a CLI that did not create them).
 */
import type { ProvisionedMachine } from "../provider";
import { provisioned } from "./machine-set";
import { isOurProcess, residentKiB } from "./processes";
import type { QemuRuntime } from "./runtime";
import { listSetDirs, readState, setDir, type SetState } from "./state";
import { isSwitchAlive } from "./switch";
import { vmPaths } from "./vm";

/** One machine set on disk with its processes' liveness; `sessionId` is the set's id (state.ts). */
export interface QemuSetSummary {
  sessionId: string;
  labSlug: string;
  phase: SetState["phase"];
  createdAt: string;
  switchAlive: boolean;
  machines: { name: string; pid: number; running: boolean; sshPort: number; eth1Address: string; rssKiB?: number }[];
}

/** Every set on disk under the runtime's data directory, with its processes' liveness. */
export async function listSets(runtime: QemuRuntime): Promise<QemuSetSummary[]> {
  const result: QemuSetSummary[] = [];
  for (const setId of await listSetDirs(runtime.dataDir)) {
    const found = runtime.sets.get(setId) ?? (await readState(setDir(runtime.dataDir, setId)));
    if (!("state" in found)) continue;
    result.push(await summary(setId, found.state));
  }
  return result;
}

async function summary(setId: string, state: SetState): Promise<QemuSetSummary> {
  return {
    sessionId: setId,
    labSlug: state.labSlug,
    phase: state.phase,
    createdAt: state.createdAt,
    switchAlive: state.switch.pid > 0 && (await isSwitchAlive(state.switch)),
    machines: await Promise.all(
      state.vms.map(async (r) => {
        const running = r.pid > 0 && (await isOurProcess(r.pid, vmPaths(r.dir).pidFile));
        return {
          name: r.name,
          pid: r.pid,
          running,
          sshPort: r.sshPort,
          eth1Address: r.eth1Address,
          rssKiB: running ? await residentKiB(r.pid) : undefined,
        };
      }),
    ),
  };
}

/** The set's machines as create returned them, from memory or its state on disk. */
export async function machinesOf(runtime: QemuRuntime, setId: string): Promise<ProvisionedMachine[]> {
  const set = runtime.sets.get(setId);
  if (set) return provisioned(set.state);
  const found = await readState(setDir(runtime.dataDir, setId));
  if ("error" in found) throw new Error(`session ${setId}: ${found.error}`);
  return provisioned(found.state);
}
