/**
 * A machine started from a lab template's saved state (templates.ts) gets its own identity before
 * anyone else logs in: the template's machines all wake up with the template's keys.
 */
import type { SshEndpoint } from "../../ssh/connect";
import { endpointOf, type MachineSet } from "./machine-set";
import type { QemuRuntime } from "./runtime";
import type { VmRecord } from "./state";
import { identityScript, type TemplateRecord } from "./templates";
import { waitForSsh, waitRunning, type VmProcess } from "./vm";

/** Longest the identity fix-up of a machine restored from a template may run, s (a TCG guest that just woke up is slow). */
const AFTER_TEMPLATE_TIMEOUT_S = 60;

/**
 * Once the machine runs, logs in with the template's keys and installs its own (the seed's host
 * key, the set's login key, a new machine-id), steps its clock, reseeds its random generator and
 * restarts its terminal holder; then the set's pinned key must answer.
 */
export async function giveOwnIdentity(
  runtime: QemuRuntime,
  set: MachineSet,
  record: VmRecord,
  vm: VmProcess,
  template: TemplateRecord,
  hostKey: { privateKey: string; publicKey: string },
): Promise<void> {
  const { exec, bootTimeoutMs } = runtime;
  await waitRunning(vm);
  const saved = template.vms.find((v) => v.name === record.name)!;
  const asTemplate: SshEndpoint = {
    ...endpointOf(set.state, record),
    privateKey: template.clientKey.privateKey,
    hostKey: saved.hostPublicKey,
  };
  await waitForSsh(vm, asTemplate, bootTimeoutMs, "up");
  exec.close(asTemplate);
  const script = identityScript({
    hostPrivateKey: hostKey.privateKey,
    hostPublicKey: hostKey.publicKey,
    authorizedKeys: `${set.state.clientKey.publicKey} labdeck-${set.state.sessionId}\n`,
    machineId: record.machineId,
  });
  const result = await exec.run(asTemplate, script, AFTER_TEMPLATE_TIMEOUT_S);
  exec.close(asTemplate);
  if (result.outcome !== "pass")
    throw new Error(`${record.name}: giving the restored machine its identity failed (${result.outcome}): ${result.output}`);
  await waitForSsh(vm, endpointOf(set.state, record), bootTimeoutMs, "up");
}
