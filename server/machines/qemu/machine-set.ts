/**
 * A machine set: the VMs the QEMU provider made for one request, with their private switch (and,
 * for an internet lab, their network namespace), under `<dataDir>/sessions/<setId>/` (state.ts).
 * Its id is the `sessionId` of the request that made it: a lab session's id, or a warm pool's
 * `pool-…` id, which it keeps after the pool hands it to a learner's session (the machines'
 * providerRef "<setId>/<machine>"). "Set" names it in every file of this provider; "session"
 * means only the learner's lab session.
 */
import type { ProvisionedMachine } from "../provider";
import type { SshEndpoint } from "../../ssh/connect";
import type { SetState, VmRecord } from "./state";
import type { VmConfig, VmProcess } from "./vm";

/** A set this process serves: its state and handles on its live QEMU processes. */
export interface MachineSet {
  dir: string;
  state: SetState;
  /** Live QEMU processes by machine name; a VM whose exit is expected is removed first. */
  vms: Map<string, VmProcess>;
  /** Being removed or turned into a template: its VMs' exits are expected. */
  destroying: boolean;
}

/** How the platform logs in to one machine of the set. */
export function endpointOf(state: SetState, record: VmRecord): SshEndpoint {
  return {
    name: record.name,
    host: state.egress?.nsAddress ?? "127.0.0.1",
    port: record.sshPort,
    user: "root",
    privateKey: state.clientKey.privateKey,
    hostKey: record.hostPublicKey,
  };
}

/** The set's machines as the provider hands them out. */
export function provisioned(state: SetState): ProvisionedMachine[] {
  return state.vms.map((record) => ({ ...endpointOf(state, record), providerRef: `${state.sessionId}/${record.name}` }));
}

/** What QEMU is started with for one machine of the set (vm.ts). */
export function vmConfig(state: SetState, record: VmRecord): VmConfig {
  return {
    name: record.name,
    dir: record.dir,
    image: state.image,
    memoryMiB: state.memoryMiB,
    vcpus: state.vcpus,
    accel: state.accel,
    sshPort: record.sshPort,
    sshHost: state.egress?.nsAddress ?? "127.0.0.1",
    netns: state.egress?.netns,
    eth1Mac: record.eth1Mac,
    switchSocket: state.switch.socket,
    machineId: record.machineId,
    uuid: record.uuid,
  };
}
