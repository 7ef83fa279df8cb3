/**
 * Whether KVM really works here, decided by a timed boot, never by /dev/kvm or cpu flags: on the
 * project's CI hosts /dev/kvm opens but is a nested mode (PVM) in which a Debian kernel never gets
 * past its first lines. The probe boots the image's kernel with no root filesystem: it panics when
 * it finds none, `panic=-1` reboots at once, `-no-reboot` turns that into QEMU exiting. Under
 * working KVM that takes about a second.
 */
import { spawn } from "node:child_process";
import { constants } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { requireTools } from "./command";
import type { BuiltImage } from "./image";
import type { Accel } from "./vm";

/** A kernel boot to its root-mount panic under working KVM takes ~1 s; TCG ~5 s; broken KVM never ends. */
const KVM_PROBE_TIMEOUT_MS = 15_000;
/** Guest RAM for the probe, MiB: enough for the kernel to reach its root mount. */
const PROBE_MEMORY_MIB = 256;

export interface AccelChoice {
  accel: Accel;
  /** Why: the probe's outcome, for the log. */
  detail: string;
}

/** kvm when /dev/kvm opens and a kernel boots under it within the timeout; tcg otherwise. */
export async function detectAccel(image: Pick<BuiltImage, "kernel">, timeoutMs = KVM_PROBE_TIMEOUT_MS): Promise<AccelChoice> {
  try {
    const handle = await fs.open("/dev/kvm", constants.O_RDWR);
    await handle.close();
  } catch (error) {
    return { accel: "tcg", detail: `/dev/kvm not usable: ${(error as Error).message}` };
  }
  const tools = await requireTools(["qemu-system-x86_64"]);
  const started = Date.now();
  const outcome = await new Promise<{ exited: boolean; output: string }>((resolve) => {
    const child = spawn(
      tools["qemu-system-x86_64"],
      [
        "-no-user-config",
        "-nodefaults",
        "-display",
        "none",
        "-no-reboot",
        "-accel",
        "kvm",
        "-cpu",
        "host",
        "-m",
        String(PROBE_MEMORY_MIB),
        "-kernel",
        image.kernel,
        "-append",
        "console=ttyS0 panic=-1 root=/dev/labdeck-kvm-probe-none",
        "-serial",
        "stdio",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let output = "";
    const collect = (chunk: Buffer) => (output = (output + chunk.toString("utf8")).slice(-2_000));
    child.stdout.on("data", collect);
    child.stderr.on("data", collect);
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.once("error", (error) => {
      clearTimeout(timer);
      resolve({ exited: false, output: error.message });
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      resolve({ exited: signal === null, output });
    });
  });
  const ms = Date.now() - started;
  if (outcome.exited && /Kernel panic|VFS: Unable to mount root/.test(outcome.output)) {
    return { accel: "kvm", detail: `a kernel booted under KVM to its root mount in ${ms} ms` };
  }
  const last = outcome.output.trim().split("\n").slice(-1)[0] ?? "";
  return {
    accel: "tcg",
    detail: outcome.exited
      ? `KVM probe exited without booting the kernel: ${last}`
      : `a kernel under KVM did not reach its root mount in ${timeoutMs} ms (last console line: ${JSON.stringify(last)})`,
  };
}

/** Where the last probe's choice is kept in the data directory, with what it was decided for. */
const ACCEL_CACHE_FILE = "qemu-accel.json";

/**
 * detectAccel, kept in `dataDir` and asked again only when what decides it changed: the host's
 * kernel, the QEMU binary or the image's kernel. A restart then costs no probe (up to 15 s of
 * an unusable KVM), and a host upgrade probes once.
 */
export async function cachedAccel(dataDir: string, image: Pick<BuiltImage, "kernel">): Promise<AccelChoice & { cached: boolean }> {
  const key = await accelKey(image);
  const file = path.join(dataDir, ACCEL_CACHE_FILE);
  const stored = await fs
    .readFile(file, "utf8")
    .then((text) => JSON.parse(text) as { key?: string; accel?: unknown; detail?: unknown })
    .catch(() => null);
  if (stored?.key === key && (stored.accel === "kvm" || stored.accel === "tcg") && typeof stored.detail === "string") {
    return { accel: stored.accel, detail: stored.detail, cached: true };
  }
  const choice = await detectAccel(image);
  await fs.writeFile(file, JSON.stringify({ key, ...choice }) + "\n", { mode: 0o600 }).catch(() => undefined);
  return { ...choice, cached: false };
}

/**
 * What a KVM probe's answer depends on: host kernel, whether /dev/kvm can be opened (a module
 * loaded or a device passed in since), the QEMU binary (path, size, mtime), the guest kernel file.
 */
async function accelKey(image: Pick<BuiltImage, "kernel">): Promise<string> {
  const qemu = (await requireTools(["qemu-system-x86_64"]))["qemu-system-x86_64"];
  const [binary, kernel, kvm] = await Promise.all([
    fs.stat(qemu),
    fs.stat(image.kernel),
    fs.access("/dev/kvm", constants.R_OK | constants.W_OK).then(
      () => true,
      () => false,
    ),
  ]);
  return JSON.stringify([os.release(), kvm, qemu, binary.size, binary.mtimeMs, image.kernel, kernel.size]);
}
