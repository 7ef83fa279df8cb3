/**
 * Saved machine states: a VM's whole state (RAM, devices, disk) kept as an internal
 * snapshot of its qcow2 overlay, so that a reset or a resume restores instead of booting.
 *
 *   lab-start  taken right after the lab's setup (a prepared pool set or a cold start): a reset
 *              of the machine is a `loadvm` of it (seconds), not a fresh disk, a boot and the setup
 *   suspended  taken when an idle session is suspended (the guest paused, saved, QEMU ended): the
 *              resume starts QEMU with `-loadvm`; the learner's shells, still in the machine's
 *              terminal holder, are where they were
 *
 * A restored guest wakes up with the clock, the random generator and the terminal holder of the
 * moment it was saved: `afterRestore` steps the clock, reseeds the kernel's generator with host
 * randomness (besides vmgenid, vm.ts) and, for lab-start, restarts the holder so the terminal
 * offsets of the shells the learner had before the reset are not reused by a new log.
 * Snapshots are only valid for the QEMU build and accelerator that wrote them (`snapshotHost`):
 * any other host boots from the disk instead.
 */
import { randomBytes } from "node:crypto";
import { HOLDER_SOCKET } from "../../holder/client";
import { HOLDER_UNIT } from "../../holder/install";
import type { SshEndpoint } from "../../ssh/connect";
import type { SshExecPool } from "../../ssh/exec";
import { requireTools, run } from "./command";
import type { Accel, VmProcess } from "./vm";

/** The state after the lab's setup: what a reset returns to. */
export const LAB_START = "lab-start";
/** The running state a suspend saved. */
export const SUSPENDED = "suspended";
/** Longest the fix-up after a restore may run in the guest, s (a TCG guest that just woke up is slow). */
const AFTER_RESTORE_TIMEOUT_S = 60;
/** How long a restored machine's fix-up login waits for its terminal to take it (SshExecPool.handOff), ms. */
const HANDOFF_TTL_MS = 20_000;
/** A restored guest whose SSH does not answer yet is tried again this often, ms. */
const RESTORE_RETRY_MS = 500;
/** Host randomness mixed into a restored guest's pool, bytes. */
const RESEED_BYTES = 64;

let qemuVersion: Promise<string> | undefined;

/**
 * Who can load this host's snapshots: QEMU's version line and the accelerator. A state saved by
 * another QEMU build (a package upgrade) or under another accelerator may not load (or load
 * wrongly): it is not used there.
 */
export async function snapshotHost(accel: Accel): Promise<string> {
  qemuVersion ??= requireTools(["qemu-system-x86_64"])
    .then((tools) => run(tools["qemu-system-x86_64"], ["--version"]))
    .then((out) => out.split("\n")[0]!.trim());
  return `${await qemuVersion} / ${accel}`;
}

/**
 * Bash run as root in a guest right after its state was restored. The clock is stepped to the
 * host's (the guest's stood still while saved); host randomness is added with credit and the
 * kernel's generator reseeded (RNDADDENTROPY, RNDRESEEDCRNG), so two restores of one state never
 * share random numbers (keys, TCP sequence numbers); with `restartHolder` the terminal holder
 * starts as a new instance.
 */
export function afterRestoreScript(options: { epochMs: number; restartHolder: boolean; seed?: Buffer }): string {
  const seed = (options.seed ?? randomBytes(RESEED_BYTES)).toString("hex");
  const seconds = (options.epochMs / 1000).toFixed(3);
  return [
    "set -eu",
    `date -u -s @${seconds} >/dev/null`,
    "python3 - <<'PY'",
    "import fcntl, os, struct",
    `seed = bytes.fromhex("${seed}")`,
    'fd = os.open("/dev/random", os.O_WRONLY)',
    "# RNDADDENTROPY (_IOW('R', 3, int[2])): struct rand_pool_info { int entropy_count; int buf_size; u32 buf[]; }",
    'fcntl.ioctl(fd, 0x40085203, struct.pack("ii", len(seed) * 8, len(seed)) + seed)',
    "# RNDRESEEDCRNG (_IO('R', 7)): the next random bytes come from the new pool",
    "fcntl.ioctl(fd, 0x5207)",
    "PY",
    ...(options.restartHolder ? [`systemctl restart ${HOLDER_UNIT}.service`, ...holderListening()] : []),
  ].join("\n");
}

/** Longest the fix-up waits for a restarted holder to accept on its socket, s. */
const HOLDER_LISTEN_WAIT_S = 20;

/**
 * Waits until the restarted holder accepts on its socket (the unit is Type=simple: `systemctl
 * restart` returns once it is forked, seconds before a Python start under TCG listens), so the
 * machine is handed back with its holder answering and a terminal reconnecting at once gets it,
 * not a direct shell.
 */
function holderListening(): string[] {
  return [
    "python3 - <<'PY'",
    "import socket, time",
    `deadline = time.monotonic() + ${HOLDER_LISTEN_WAIT_S}`,
    "while True:",
    "    s = socket.socket(socket.AF_UNIX)",
    "    try:",
    `        s.connect(${JSON.stringify(HOLDER_SOCKET)})`,
    "        break",
    "    except OSError:",
    "        if time.monotonic() > deadline:",
    "            raise",
    "        time.sleep(0.05)",
    "    finally:",
    "        s.close()",
    "PY",
  ];
}

/**
 * Runs the fix-up in a restored guest; throws with its output when it fails. Its own login is the
 * proof that SSH answers: a guest not answering yet (its network coming back after the load) is
 * tried again every RESTORE_RETRY_MS while its QEMU runs, until `readyWithinMs` is over, instead of a separate SSH
 * probe first (one handshake less: 2-4 s of a one-vCPU guest under TCG).
 */
export async function afterRestore(
  exec: SshExecPool,
  endpoint: SshEndpoint,
  restartHolder: boolean,
  wait?: { vm: Pick<VmProcess, "hasExited">; readyWithinMs: number },
): Promise<void> {
  const deadline = Date.now() + (wait?.readyWithinMs ?? 0);
  for (;;) {
    // Never a pooled connection from before: the restored guest knows nothing of it.
    exec.close(endpoint);
    const result = await exec.run(endpoint, afterRestoreScript({ epochMs: Date.now(), restartHolder }), AFTER_RESTORE_TIMEOUT_S);
    if (result.outcome === "pass") {
      // The machine's terminal reconnects next: it takes this login instead of making its own.
      exec.handOff(endpoint, HANDOFF_TTL_MS);
      return;
    }
    exec.close(endpoint);
    if (result.outcome !== "unreachable" || Date.now() + RESTORE_RETRY_MS > deadline || wait?.vm.hasExited()) {
      throw new Error(
        `${endpoint.name}: fixing up the restored machine failed (${result.outcome}, exit ${result.exitCode}): ${result.output}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, RESTORE_RETRY_MS));
  }
}
