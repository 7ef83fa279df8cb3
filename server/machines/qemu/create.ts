/**
 * A new machine set (QEMU provider): the request checked, the set admitted (admission.ts) and
 * laid out, its switch (and namespace) started, each VM booted from the image with its seed, or,
 * from a lab template, started from the template's saved state on an overlay of its disk (no
 * boot, the lab already set up) and given its own identity (identity.ts); ready when every VM
 * answers SSH. A failed create removes whatever it started.
 */
import { randomBytes, randomUUID } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import type { MachineRequest, ProvisionedMachine } from "../provider";
import type { ImageRecipe } from "../images/recipe";
import { hostsFile, seedFile } from "../images/seed";
import { generateEd25519 } from "../keys";
import type { Admission } from "./admission";
import { egressUnavailable } from "./egress";
import { giveOwnIdentity } from "./identity";
import { endpointOf, provisioned, type MachineSet } from "./machine-set";
import { InternetNotOfferedError } from "./network";
import { freeLoopbackPort } from "./ports";
import type { ImageFiles, QemuRuntime } from "./runtime";
import { SetId, setDir, type VmRecord } from "./state";
import { startSwitch } from "./switch";
import { templatePaths, type TemplateRecord } from "./templates";
import { ensureOverlay, vmPaths, waitForSsh } from "./vm";

/** Niceness of machines made in the background (warm-pool spares) until they are handed out. */
const BACKGROUND_NICE = 10;
/** Most machines one set may have. */
const MAX_MACHINES = 8;
/** The sets' private network: every set uses the same addresses (isolated by its own switch). */
const ETH1_NETWORK = "192.168.56";
/** Host part of the first machine's eth1 address: controlplane .10, node01 .11, node02 .12. */
const ETH1_FIRST_HOST = 10;
const ETH1_PREFIX = 24;
/** Machine names: lowercase hostnames, as static-hosts.ts accepts. */
const MACHINE_NAME = /^[a-z][a-z0-9-]{0,30}$/;

/** A lab template a new set starts from (template-sets.ts): its directory and record. */
export interface FromTemplate {
  dir: string;
  record: TemplateRecord;
}

/** Host keys made for a new set's machines, by machine name. */
type HostKeys = Map<string, { privateKey: string; publicKey: string }>;

/** A new set's machines: booted from the image, or started from `template`. */
export async function createSet(
  runtime: QemuRuntime,
  admission: Admission,
  request: MachineRequest,
  template?: FromTemplate,
): Promise<ProvisionedMachine[]> {
  const setId = SetId.parse(request.sessionId);
  const names = checkedNames(request.machines);
  if (request.internet) {
    const unavailable = await egressUnavailable();
    if (unavailable) throw new InternetNotOfferedError(request.labSlug, unavailable);
  }
  const dir = setDir(runtime.dataDir, setId);
  const image = await imageOf(runtime, request, template);
  return runtime.serialised(setId, async () => {
    if (runtime.sets.has(setId) || (await fs.stat(dir).catch(() => null))) {
      throw new Error(`session ${setId} already has machines (${dir}); destroy it first`);
    }
    const started = Date.now();
    const size = template ? { vcpus: template.record.vcpus, memoryMiB: template.record.memoryMiB } : runtime.sizeOf(request.image);
    // A boot takes CPU; a start from a template's saved state hardly any.
    const boot = template ? undefined : { background: request.background === true };
    const set = await admission.withCapacity(async () => {
      await admission.admit(setId, names.length, size.memoryMiB, boot);
      const laidOut = await layOut(runtime, {
        setId,
        labSlug: request.labSlug,
        names,
        dir,
        image,
        internet: request.internet === true,
        size,
      });
      runtime.sets.set(setId, laidOut);
      return laidOut;
    });
    if (template) takeTemplateDevices(set, template);
    try {
      await bringUp(runtime, set, request, template);
      set.state.phase = "ready";
      await runtime.save(set);
      runtime.log.info(
        { sessionId: setId, lab: request.labSlug, machines: names, ms: Date.now() - started },
        "qemu provider: session ready",
      );
      return provisioned(set.state);
    } catch (error) {
      runtime.log.warn({ sessionId: setId, err: error }, "qemu provider: create failed; removing what was started");
      await runtime
        .teardown(setId)
        .catch((cleanupError: unknown) =>
          runtime.log.error({ sessionId: setId, err: cleanupError }, "qemu provider: cleanup after failed create failed"),
        );
      throw error;
    } finally {
      admission.booted(setId);
    }
  });
}

/** The request's machine names, refused when too few, too many, not hostnames or repeated. */
function checkedNames(machines: readonly string[]): string[] {
  const names = [...machines];
  if (names.length === 0 || names.length > MAX_MACHINES)
    throw new Error(`a session needs 1..${MAX_MACHINES} machines (got ${names.length})`);
  for (const name of names) {
    if (!MACHINE_NAME.test(name)) throw new Error(`machine name ${JSON.stringify(name)} must be a lowercase hostname (≤31 characters)`);
  }
  if (new Set(names).size !== names.length) throw new Error(`machine names repeat: ${names.join(", ")}`);
  return names;
}

/** The image the new set's VMs stand on: the template's, the requested variant's, or the provider's. */
async function imageOf(runtime: QemuRuntime, request: MachineRequest, template?: FromTemplate): Promise<ImageFiles> {
  const image = template
    ? template.record.image
    : request.image && runtime.imageFor
      ? await runtime.imageFor(request.image)
      : runtime.image;
  if (!image) {
    throw new Error(
      `the qemu provider has no image ${request.image ?? ""} to boot: build it (npm run labdeck -- image build${request.image ? ` --variant ${request.image}` : ""})`,
    );
  }
  return image;
}

/** A new set as it will be started: each VM's directory, SSH port, eth1 address and identity; phase "starting". */
async function layOut(
  runtime: QemuRuntime,
  spec: {
    setId: string;
    labSlug: string;
    names: string[];
    dir: string;
    image: ImageFiles;
    internet: boolean;
    size: ImageRecipe["machine"];
  },
): Promise<MachineSet> {
  const { setId, dir, image, size } = spec;
  const clientKey = generateEd25519(`labdeck-${setId}`);
  const vms: VmRecord[] = [];
  for (const [index, name] of spec.names.entries()) {
    vms.push({
      name,
      dir: path.join(dir, `vm-${name}`),
      pid: 0,
      sshPort: await freeLoopbackPort(),
      eth1Address: `${ETH1_NETWORK}.${ETH1_FIRST_HOST + index}/${ETH1_PREFIX}`,
      // In QEMU's 52:54:00 range; unique within the set (sets are separate L2 networks).
      eth1Mac: `52:54:00:56:00:${(ETH1_FIRST_HOST + index).toString(16).padStart(2, "0")}`,
      hostPublicKey: "",
      machineId: randomBytes(16).toString("hex"),
      uuid: randomUUID(),
      snapshots: [],
    });
  }
  return {
    dir,
    destroying: false,
    vms: new Map(),
    state: {
      version: 1,
      sessionId: setId,
      labSlug: spec.labSlug,
      phase: "starting",
      creatorPid: process.pid,
      createdAt: new Date().toISOString(),
      image: { base: path.resolve(image.base), kernel: path.resolve(image.kernel), initrd: path.resolve(image.initrd) },
      memoryMiB: size.memoryMiB,
      vcpus: size.vcpus,
      accel: runtime.accel,
      clientKey,
      switch: { socket: path.join(dir, "switch"), pidFile: path.join(dir, "switch.pid"), pid: 0 },
      internet: spec.internet,
      vms,
    },
  };
}

/** The template's devices as they were saved: a restored guest keeps its NICs' MACs and SMBIOS uuid. */
function takeTemplateDevices(set: MachineSet, template: FromTemplate): void {
  set.state.template = template.dir;
  for (const record of set.state.vms) {
    const saved = template.record.vms.find((v) => v.name === record.name)!;
    Object.assign(record, { eth1Mac: saved.eth1Mac, eth1Address: saved.eth1Address, uuid: saved.uuid });
  }
}

/** The set's directory, switch and namespace, then its VMs started and answering SSH. */
async function bringUp(runtime: QemuRuntime, set: MachineSet, request: MachineRequest, template?: FromTemplate): Promise<void> {
  await fs.mkdir(set.dir, { recursive: true, mode: 0o700 });
  await runtime.save(set);
  const sw = await startSwitch(set.dir);
  set.state.switch = { socket: sw.socket, pidFile: sw.pidFile, pid: sw.pid };
  await runtime.save(set);
  if (set.state.internet) await runtime.ensureEgress(set);

  const hostKeys: HostKeys = new Map(set.state.vms.map((r) => [r.name, generateEd25519(`${r.name}@labdeck`)]));
  for (const record of set.state.vms) record.hostPublicKey = hostKeys.get(record.name)!.publicKey;
  await startMachines(runtime, set, hostKeys, request.background ? BACKGROUND_NICE : 0, template);

  await Promise.all(
    set.state.vms.map(async (record) => {
      const t = Date.now();
      const vm = set.vms.get(record.name)!;
      if (template) await giveOwnIdentity(runtime, set, record, vm, template.record, hostKeys.get(record.name)!);
      else await waitForSsh(vm, endpointOf(set.state, record), runtime.bootTimeoutMs);
      runtime.log.debug({ sessionId: set.state.sessionId, machine: record.name, ms: Date.now() - t }, "qemu provider: SSH ready");
    }),
  );
}

/** Starts every VM of the set on its overlay and seed; throws the first failure once all starts have settled. */
async function startMachines(
  runtime: QemuRuntime,
  set: MachineSet,
  hostKeys: HostKeys,
  nice: number,
  template?: FromTemplate,
): Promise<void> {
  const hosts = hostsFile(set.state.vms.map((r) => ({ name: r.name, eth1Address: r.eth1Address })));
  // allSettled: a failed start must not leave a sibling's start running into the teardown.
  const starts = await Promise.allSettled(
    set.state.vms.map(async (record) => {
      const paths = vmPaths(record.dir);
      await fs.mkdir(paths.dir, { recursive: true, mode: 0o700 });
      await ensureOverlay(template ? templatePaths(template.dir, record.name).disk : set.state.image.base, paths.overlay);
      const hostKey = hostKeys.get(record.name)!;
      const seed = seedFile({
        hostname: record.name,
        eth1Address: record.eth1Address,
        hosts,
        hostPrivateKey: hostKey.privateKey,
        hostPublicKey: hostKey.publicKey,
        authorizedKeys: `${set.state.clientKey.publicKey} labdeck-${set.state.sessionId}\n`,
      });
      await fs.writeFile(paths.seed, seed, { mode: 0o600 });
      const incoming = template ? templatePaths(template.dir, record.name).state : undefined;
      const vm = await runtime.startVm(set, record, { reusePort: false, nice, incoming });
      record.pid = vm.pid;
      runtime.watch(set, vm);
    }),
  );
  await runtime.save(set);
  const failed = starts.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
}
