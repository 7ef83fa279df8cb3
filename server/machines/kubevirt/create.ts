/**
 * A new machine set on the fleet (KubeVirt provider): quota checked, golden PVC ensured, the set's
 * objects made (manifests.ts) and its VMs started, ready when every VMI runs and every machine
 * answers SSH with its pinned host key. A failed create deletes what it made.
 */
import type { MachineRequest, ProvisionedMachine } from "../provider";
import { generateEd25519 } from "../keys";
import { QuotaExceededError } from "./capacity";
import { destroySet } from "./lifecycle";
import { setObjects, SSH_PORT, type SetObjects } from "./manifests";
import { DEFAULT_VARIANT, type KubevirtRuntime } from "./runtime";
import { waitForSsh } from "./ssh-probe";
import { running, waitForVmis } from "./vmis";
import { z } from "zod";

/** Most machines one set may have (as the QEMU provider). */
const MAX_MACHINES = 8;
const MACHINE_NAME = /^[a-z][a-z0-9-]{0,30}$/;

const ServiceAnswer = z.looseObject({ spec: z.looseObject({ clusterIP: z.string().min(1) }) });

export async function createSet(runtime: KubevirtRuntime, request: MachineRequest): Promise<ProvisionedMachine[]> {
  const { log } = runtime;
  const started = Date.now();
  const deadline = started + runtime.bootTimeoutMs;
  if (request.machines.length === 0 || request.machines.length > MAX_MACHINES)
    throw new Error(`a session needs 1..${MAX_MACHINES} machines`);
  for (const name of request.machines)
    if (!MACHINE_NAME.test(name)) throw new Error(`machine name ${JSON.stringify(name)} must match ${MACHINE_NAME}`);
  const variant = request.image ?? DEFAULT_VARIANT;
  const hash = runtime.imageHash(variant);
  await runtime.checkQuota(variant, request.machines.length);

  const clientKey = generateEd25519(`labdeck-${request.sessionId}`);
  const hostKeys = request.machines.map((name) => ({ name, ...generateEd25519(name) }));
  const objects = setObjects(runtime.settings, {
    setId: request.sessionId,
    labSlug: request.labSlug,
    variant,
    imageHash: hash,
    internet: request.internet ?? false,
    machines: hostKeys.map((k) => ({ name: k.name, hostPrivateKey: k.privateKey, hostPublicKey: k.publicKey })),
    authorizedKeys: `${clientKey.publicKey} labdeck-${request.sessionId}\n`,
  });
  try {
    await runtime.ensureGolden(variant, hash);
    const machines = await makeObjects(runtime, request.sessionId, objects, clientKey.privateKey, hostKeys);
    const created = Date.now();
    await waitForVmis(runtime, request.sessionId, request.machines, running(), deadline, `session ${request.sessionId}: VMs running`);
    const runningAt = Date.now();
    await waitForSsh(machines, deadline);
    log.info(
      {
        sessionId: request.sessionId,
        variant,
        machines: request.machines.length,
        apiMs: created - started,
        runningMs: runningAt - created,
        sshMs: Date.now() - runningAt,
      },
      "kubevirt machines ready",
    );
    return machines;
  } catch (error) {
    await destroySet(runtime, request.sessionId).catch((cleanup: Error) =>
      log.warn({ sessionId: request.sessionId, err: cleanup.message }, "cleanup after a failed create"),
    );
    if (error instanceof QuotaExceededError)
      log.info({ sessionId: request.sessionId, detail: error.detail }, "kubevirt: no room in the namespace quota");
    throw error;
  }
}

/** The set's network and policy, then per machine its Secret, Service and VM, started; the machines as handed out. */
async function makeObjects(
  runtime: KubevirtRuntime,
  setId: string,
  objects: SetObjects,
  privateKey: string,
  hostKeys: readonly { publicKey: string }[],
): Promise<ProvisionedMachine[]> {
  const { api } = runtime;
  await api.create("networkAttachmentDefinitions", objects.network);
  await api.create("networkPolicies", objects.policy);
  return Promise.all(
    objects.machines.map(async (m, i): Promise<ProvisionedMachine> => {
      await api.create("secrets", m.secret);
      const service = ServiceAnswer.parse(await api.create("services", m.service));
      await api.create("virtualMachines", m.vm);
      await api.vmAction(m.vm.metadata.name, "start");
      return {
        name: m.name,
        host: service.spec.clusterIP,
        port: SSH_PORT,
        user: "root",
        privateKey,
        hostKey: hostKeys[i]!.publicKey,
        providerRef: `${setId}/${m.name}`,
      };
    }),
  );
}
