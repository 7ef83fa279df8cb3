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
