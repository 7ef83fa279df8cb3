/**
 * Fresh QEMU VMs for `labs test` (server/labs/lab-test.ts): one throw-away session per run, with
 * real reboots for the steps that must hold after one. Used by the CLI and the real-VM lab test.
 */
import type { LabTestMachines } from "../../labs/lab-test";
import type { QemuProvider } from "./provider";

export async function qemuLabMachines(
  provider: QemuProvider,
  names: readonly string[],
  say: (line: string) => void,
): Promise<{ machines: LabTestMachines; close: () => Promise<void> }> {
  const sessionId = `labtest-${Date.now().toString(36)}`;
  say(`booting ${names.join(", ")} (QEMU)…`);
  const started = Date.now();
  const provisioned = await provider.create({ sessionId, labSlug: "labs-test", machines: names });
  say(`machines ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const byName = new Map(provisioned.map((m) => [m.name, m]));
  const machine = (name: string) => {
    const m = byName.get(name);
    if (!m) throw new Error(`no machine ${name}`);
    return m;
  };
  return {
    machines: {
      async endpoint(name) {
        const m = machine(name);
        return { name, host: m.host, port: m.port, user: m.user, privateKey: m.privateKey, hostKey: m.hostKey };
      },
      async reboot(name) {
        const t = Date.now();
        say(`  rebooting ${name}…`);
        await provider.reboot(sessionId, machine(name));
        say(`  ${name} answers SSH again after ${((Date.now() - t) / 1000).toFixed(1)} s`);
      },
    },
    close: () => provider.destroy(sessionId, provisioned),
  };
}
