/**
 * Lab templates of the QEMU provider's machine sets (templates.ts has what they are): a set just
 * set up kept as its lab version's template, new sets and resets started from it with their own
 * identity (identity.ts).
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import type { MachineRequest, ProvisionedMachine } from "../provider";
import { seedHostKey } from "../images/seed";
import type { Admission } from "./admission";
import { createSet } from "./create";
import { giveOwnIdentity } from "./identity";
import type { MachineSet } from "./machine-set";
import type { QemuRuntime } from "./runtime";
import { markLabStart } from "./saved-states";
import { snapshotHost } from "./snapshots";
import { listSetDirs, readState, setDir, type SetState, type VmRecord } from "./state";
import { readTemplate, TEMPLATE_VERSION, templateDir, templatePaths, templatesDir, writeTemplate, type TemplateRecord } from "./templates";
import { ensureOverlay, saveVmToFile, vmPaths } from "./vm";

/**
 * Keeps a freshly set-up set (a prepared pool set) as its lab version's template and removes the
 * set: each machine's state is saved to a file with the guest paused and its overlay becomes the
 * template's disk. Templates of the lab's other versions that no set stands on any more are
 * deleted.
 */
export async function savePrepared(
  runtime: QemuRuntime,
  sessionId: string,
  machines: readonly ProvisionedMachine[],
  labVersion: string,
): Promise<void> {
  const id = runtime.setIdOf(sessionId, machines);
  await runtime.serialised(id, async () => {
    const set = runtime.setOrThrow(id);
    const state = set.state;
    if (state.internet) throw new Error("a session with internet access is not kept as a template");
    const started = Date.now();
    const dir = templateDir(runtime.dataDir, state.labSlug, labVersion);
    const temp = `${dir}.tmp-${randomBytes(4).toString("hex")}`;
    await fs.mkdir(temp, { recursive: true, mode: 0o700 });
    set.destroying = true; // the VMs' exits below are expected
    try {
      runtime.exec.closeAll();
      await saveAsTemplate(set, temp, labVersion);
      await fs.rm(dir, { recursive: true, force: true });
      await fs.rename(temp, dir);
    } catch (error) {
      await fs.rm(temp, { recursive: true, force: true });
      throw error;
    } finally {
      await runtime.teardown(id);
    }
    runtime.log.info({ lab: state.labSlug, labVersion, ms: Date.now() - started }, "qemu provider: lab template saved");
    await removeUnusedTemplates(runtime, state.labSlug, dir);
  });
}

/** Writes the set's machines into template directory `dir`: states saved (QEMU ends), overlays moved, the record. */
async function saveAsTemplate(set: MachineSet, dir: string, labVersion: string): Promise<void> {
  const state = set.state;
  await Promise.all(
    state.vms.map(async (record) => {
      const vm = set.vms.get(record.name);
      if (!vm || vm.hasExited()) throw new Error(`${record.name} is not running`);
      const paths = templatePaths(dir, record.name);
      await fs.mkdir(paths.dir, { mode: 0o700 });
      await saveVmToFile(vm, paths.state);
      await fs.rename(vmPaths(record.dir).overlay, paths.disk);
    }),
  );
  await writeTemplate(dir, templateRecord(state, labVersion, await snapshotHost(state.accel)));
}

function templateRecord(state: SetState, labVersion: string, host: string): TemplateRecord {
  return {
    version: TEMPLATE_VERSION,
    labSlug: state.labSlug,
    labVersion,
    snapshotHost: host,
    image: state.image,
    memoryMiB: state.memoryMiB,
    vcpus: state.vcpus,
    accel: state.accel,
    createdAt: new Date().toISOString(),
    clientKey: state.clientKey,
    vms: state.vms.map((r) => ({
      name: r.name,
      eth1Address: r.eth1Address,
      eth1Mac: r.eth1Mac,
      hostPublicKey: r.hostPublicKey,
      uuid: r.uuid,
    })),
  };
}

/** Templates of a lab other than `keep` that no set on disk stands on. */
async function removeUnusedTemplates(runtime: QemuRuntime, labSlug: string, keep: string): Promise<void> {
  const { dataDir } = runtime;
  const inUse = new Set<string>();
  for (const setId of await listSetDirs(dataDir)) {
    const found = runtime.sets.get(setId) ?? (await readState(setDir(dataDir, setId)));
    if ("state" in found && found.state.template) inUse.add(found.state.template);
  }
  for (const name of await fs.readdir(templatesDir(dataDir)).catch(() => [] as string[])) {
    const dir = path.join(templatesDir(dataDir), name);
    if (dir === keep || !name.startsWith(`${labSlug}-`) || inUse.has(dir)) continue;
    await fs.rm(dir, { recursive: true, force: true });
    runtime.log.info({ template: dir }, "qemu provider: old lab template removed");
  }
}

/**
 * A new set of the request's lab from its template for `labVersion`, when there is a usable one
 * (this QEMU build and accelerator, the same image and machines); null otherwise. A pool spare
 * (background) also saves its lab start right away (~1 s per VM, nobody waits): a reset is then a
 * `loadvm` in place (seconds) instead of a restart from the template (bench/lab-start.ts: 12.9 s).
 */
export async function restorePrepared(
  runtime: QemuRuntime,
  admission: Admission,
  request: MachineRequest & { labVersion: string },
): Promise<ProvisionedMachine[] | null> {
  const machines = await fromTemplate(runtime, admission, request);
  if (machines && request.background) await markLabStart(runtime, request.sessionId, machines);
  return machines;
}

async function fromTemplate(
  runtime: QemuRuntime,
  admission: Admission,
  request: MachineRequest & { labVersion: string },
): Promise<ProvisionedMachine[] | null> {
  if (request.internet) return null;
  const dir = templateDir(runtime.dataDir, request.labSlug, request.labVersion);
  const record = await readTemplate(dir);
  if (!record || record.labVersion !== request.labVersion || record.snapshotHost !== (await snapshotHost(runtime.accel))) return null;
  const image = request.image && runtime.imageFor ? await runtime.imageFor(request.image) : runtime.image;
  if (
    !image ||
    path.resolve(image.base) !== record.image.base ||
    !sameNames(
      record.vms.map((v) => v.name),
      request.machines,
    )
  )
    return null;
  return createSet(runtime, admission, request, { dir, record });
}

/** One machine again from the template it started from: a new overlay on the template's disk, its state, its own identity. */
export async function restartFromTemplate(
  runtime: QemuRuntime,
  set: MachineSet,
  record: VmRecord,
  dir: string,
  template: TemplateRecord,
): Promise<void> {
  await runtime.stopExpected(set, record);
  const paths = vmPaths(record.dir);
  const hostKey = seedHostKey(await fs.readFile(paths.seed, "utf8"));
  await fs.rm(paths.overlay, { force: true });
  record.snapshots = [];
  await ensureOverlay(templatePaths(dir, record.name).disk, paths.overlay);
  const vm = await runtime.powerOn(set, record, { incoming: templatePaths(dir, record.name).state });
  await giveOwnIdentity(runtime, set, record, vm, template, hostKey);
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((name, i) => name === b[i]);
}
