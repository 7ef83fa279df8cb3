/**
 * Lab templates of the QEMU provider's sessions (templates.ts has what they are): a set just
 * set up kept as its lab version's template, new sets and resets started from it with their own
 * identity.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import type { MachineRequest, ProvisionedMachine } from "../provider";
import type { SshEndpoint } from "../../ssh/connect";
import { seedHostKey } from "../images/seed";
import type { QemuCore, Runtime } from "./session-core";
import { snapshotHost } from "./snapshots";
import { listSessionDirs, readState, sessionDir, type VmRecord } from "./state";
import {
  identityScript,
  readTemplate,
  TEMPLATE_VERSION,
  templateDir,
  templatePaths,
  templatesDir,
  writeTemplate,
  type TemplateRecord,
} from "./templates";
import { ensureOverlay, saveVmToFile, vmPaths, waitForSsh, waitRunning, type VmProcess } from "./vm";
import { terminate } from "./processes";

/** Longest the identity fix-up of a machine restored from a template may run, s (a TCG guest that just woke up is slow). */
const AFTER_TEMPLATE_TIMEOUT_S = 60;
/** How long a killed VM gets between SIGTERM and SIGKILL, in ms. */
const KILL_GRACE_MS = 3_000;

export function templateOps(
  core: QemuCore,
  startSession: (request: MachineRequest, template?: { dir: string; record: TemplateRecord }) => Promise<ProvisionedMachine[]>,
) {
  const {
    accel,
    exec,
    bootTimeoutMs,
    log,
    runtimes,
    serialised,
    save,
    endpointOf,
    watch,
    startRecord,
    runtimeOrThrow,
    sessionOf,
    teardown,
  } = core;
  const options = { dataDir: core.dataDir, image: core.image, imageFor: core.imageFor };

  /**
   * A machine started from a template's saved state: once it runs, logs in with the template's
   * keys and installs its own (the seed's host key, the session's login key, a new machine-id),
   * steps its clock, reseeds its random generator and restarts its terminal holder; then the
   * session's pinned key must answer.
   */
  async function giveOwnIdentity(
    runtime: Runtime,
    record: VmRecord,
    vm: VmProcess,
    template: TemplateRecord,
    hostKey: { privateKey: string; publicKey: string },
  ): Promise<void> {
    await waitRunning(vm);
    const saved = template.vms.find((v) => v.name === record.name)!;
    const asTemplate: SshEndpoint = {
      ...endpointOf(runtime.state, record),
      privateKey: template.clientKey.privateKey,
      hostKey: saved.hostPublicKey,
    };
    await waitForSsh(vm, asTemplate, bootTimeoutMs, "up");
    exec.close(asTemplate);
    const script = identityScript({
      hostPrivateKey: hostKey.privateKey,
      hostPublicKey: hostKey.publicKey,
      authorizedKeys: `${runtime.state.clientKey.publicKey} labdeck-${runtime.state.sessionId}\n`,
      machineId: record.machineId,
    });
    const result = await exec.run(asTemplate, script, AFTER_TEMPLATE_TIMEOUT_S);
    exec.close(asTemplate);
    if (result.outcome !== "pass")
      throw new Error(`${record.name}: giving the restored machine its identity failed (${result.outcome}): ${result.output}`);
    await waitForSsh(vm, endpointOf(runtime.state, record), bootTimeoutMs, "up");
  }

  /**
   * Keeps a freshly set-up session (a prepared pool set) as its lab version's template and
   * removes the session: each machine's state is saved to a file with the guest paused and its
   * overlay becomes the template's disk. Templates of the lab's other versions that no session
   * stands on any more are deleted.
   */
  async function savePrepared(sessionId: string, machines: readonly ProvisionedMachine[], labVersion: string): Promise<void> {
    const id = sessionOf(sessionId, machines);
    await serialised(id, async () => {
      const runtime = await runtimeOrThrow(id);
      const state = runtime.state;
      if (state.internet) throw new Error("a session with internet access is not kept as a template");
      const started = Date.now();
      const dir = templateDir(options.dataDir, state.labSlug, labVersion);
      const temp = `${dir}.tmp-${randomBytes(4).toString("hex")}`;
      await fs.mkdir(temp, { recursive: true, mode: 0o700 });
      runtime.destroying = true; // the VMs' exits below are expected
      try {
        exec.closeAll();
        await Promise.all(
          state.vms.map(async (record) => {
            const vm = runtime.vms.get(record.name);
            if (!vm || vm.hasExited()) throw new Error(`${record.name} is not running`);
            const paths = templatePaths(temp, record.name);
            await fs.mkdir(paths.dir, { mode: 0o700 });
            await saveVmToFile(vm, paths.state);
            await fs.rename(vmPaths(record.dir).overlay, paths.disk);
          }),
        );
        await writeTemplate(temp, {
          version: TEMPLATE_VERSION,
          labSlug: state.labSlug,
          labVersion,
          snapshotHost: await snapshotHost(state.accel),
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
        });
        await fs.rm(dir, { recursive: true, force: true });
        await fs.rename(temp, dir);
      } catch (error) {
        await fs.rm(temp, { recursive: true, force: true });
        throw error;
      } finally {
        await teardown(id);
      }
      log.info({ lab: state.labSlug, labVersion, ms: Date.now() - started }, "qemu provider: lab template saved");
      await removeUnusedTemplates(state.labSlug, dir);
    });
  }

  /** Templates of a lab other than `keep` that no session on disk stands on. */
  async function removeUnusedTemplates(labSlug: string, keep: string): Promise<void> {
    const inUse = new Set<string>();
    for (const sessionId of await listSessionDirs(options.dataDir)) {
      const found = runtimes.get(sessionId) ?? (await readState(sessionDir(options.dataDir, sessionId)));
      if ("state" in found && found.state.template) inUse.add(found.state.template);
    }
    for (const name of await fs.readdir(templatesDir(options.dataDir)).catch(() => [] as string[])) {
      const dir = path.join(templatesDir(options.dataDir), name);
      if (dir === keep || !name.startsWith(`${labSlug}-`) || inUse.has(dir)) continue;
      await fs.rm(dir, { recursive: true, force: true });
      log.info({ template: dir }, "qemu provider: old lab template removed");
    }
  }

  /**
   * A new session of the request's lab from its template for `labVersion`, when there is a usable
   * one (this QEMU build and accelerator, the same image and machines); null otherwise.
   */
  async function restorePrepared(request: MachineRequest & { labVersion: string }): Promise<ProvisionedMachine[] | null> {
    if (request.internet) return null;
    const dir = templateDir(options.dataDir, request.labSlug, request.labVersion);
    const record = await readTemplate(dir);
    if (!record || record.labVersion !== request.labVersion || record.snapshotHost !== (await snapshotHost(accel))) return null;
    const image = request.image && options.imageFor ? await options.imageFor(request.image) : options.image;
    if (
      !image ||
      path.resolve(image.base) !== record.image.base ||
      !sameNames(
        record.vms.map((v) => v.name),
        request.machines,
      )
    )
      return null;
    return startSession(request, { dir, record });
  }

  /** One machine again from the template it started from: a new overlay on the template's disk, its state, its own identity. */
  async function restartFromTemplate(runtime: Runtime, record: VmRecord, dir: string, template: TemplateRecord): Promise<void> {
    runtime.vms.delete(record.name); // its exit is expected, not a crash
    if (record.pid > 0) await terminate(record.pid, vmPaths(record.dir).pidFile, KILL_GRACE_MS);
    const paths = vmPaths(record.dir);
    const hostKey = seedHostKey(await fs.readFile(paths.seed, "utf8"));
    await fs.rm(paths.overlay, { force: true });
    record.snapshots = [];
    await ensureOverlay(templatePaths(dir, record.name).disk, paths.overlay);
    const vm = await startRecord(runtime, record, true, 0, undefined, templatePaths(dir, record.name).state);
    record.pid = vm.pid;
    watch(runtime, vm);
    await save(runtime);
    await giveOwnIdentity(runtime, record, vm, template, hostKey);
  }

  return { giveOwnIdentity, savePrepared, restorePrepared, restartFromTemplate };
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((name, i) => name === b[i]);
}
