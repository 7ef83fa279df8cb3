/**
 * Fresh QEMU VMs for `labs test` (server/labs/lab-test.ts): one throw-away session per run, with
 * real reboots for the steps that must hold after one. A reboot is the one a learner does
 * (`systemctl reboot` inside: services stop, file systems are synced and unmounted), not the
 * provider's hard reset, which would lose what is still in the page cache. Resets between a
 * step's fixtures are internal snapshots of the VM (savevm/loadvm: memory and disk, seconds). Used
 * by the CLI and the real-VM lab test.
 */
import { randomBytes } from "node:crypto";
import type { LabTestMachines } from "../labs/lab-test";
import { connectSsh, type SshEndpoint } from "../ssh/connect";
import type { QemuProvider } from "../machines/qemu/provider";

/** Login and one short command, ms. */
const COMMAND_TIMEOUT_MS = 20_000;

export async function qemuLabMachines(
  provider: QemuProvider,
  names: readonly string[],
  say: (line: string) => void,
  /** The lab asks for the internet (lab.yaml `network.internet`): the VMs get the egress path. */
  internet = false,
): Promise<{ machines: LabTestMachines; close: () => Promise<void> }> {
  // Random part: two throw-away sessions may be made in the same millisecond (the split lab test).
  const sessionId = `labtest-${Date.now().toString(36)}-${randomBytes(3).toString("hex")}`;
  say(`booting ${names.join(", ")} (QEMU)…`);
  const started = Date.now();
  const provisioned = await provider.create({ sessionId, labSlug: "labs-test", machines: names, internet });
  say(`machines ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const endpoints = new Map<string, SshEndpoint>(
    provisioned.map((m) => [
      m.name,
      { name: m.name, host: m.host, port: m.port, user: m.user, privateKey: m.privateKey, hostKey: m.hostKey },
    ]),
  );
  const endpoint = (name: string) => {
    const e = endpoints.get(name);
    if (!e) throw new Error(`no machine ${name}`);
    return e;
  };
  const provisionedOf = (name: string) => {
    const m = provisioned.find((p) => p.name === name);
    if (!m) throw new Error(`no machine ${name}`);
    return m;
  };
  return {
    machines: {
      endpoint: async (name) => endpoint(name),
      snapshot: (name, tag) => provider.saveState(sessionId, provisionedOf(name), tag),
      restore: (name, tag) => provider.loadState(sessionId, provisionedOf(name), tag),
      async reboot(name) {
        const t = Date.now();
        say(`  rebooting ${name} (systemctl reboot)…`);
        const before = await run(endpoint(name), "cat /proc/sys/kernel/random/boot_id");
        // The command's connection dies with the machine: its result is not waited for. The
        // provider waits for the new boot's ready line on the console, then for SSH.
        await provider.guestReboot(
          sessionId,
          provisionedOf(name),
          async () => void run(endpoint(name), "systemctl reboot").catch(() => undefined),
        );
        const after = await run(endpoint(name), "cat /proc/sys/kernel/random/boot_id");
        if (after === before) throw new Error(`${name} answered SSH after a reboot with the same boot id`);
        say(`  ${name} answers SSH again after ${((Date.now() - t) / 1000).toFixed(1)} s (new boot)`);
      },
    },
    close: () => provider.destroy(sessionId, provisioned),
  };
}

/** Runs one command over a fresh connection; its trimmed stdout. */
async function run(endpoint: SshEndpoint, command: string): Promise<string> {
  const client = await connectSsh(endpoint, COMMAND_TIMEOUT_MS);
  try {
    return await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${endpoint.name}: ${command}: no answer`)), COMMAND_TIMEOUT_MS);
      client.exec(command, (error, stream) => {
        if (error) return reject(error);
        let out = "";
        stream.on("data", (d: Buffer) => (out += d.toString("utf8")));
        stream.on("close", () => {
          clearTimeout(timer);
          resolve(out.trim());
        });
      });
    });
  } finally {
    client.end();
  }
}
