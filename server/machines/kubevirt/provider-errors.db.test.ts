/**
 * The KubeVirt provider's refusals against a FAKE Kubernetes API (server/testing/fake-kube-api.ts;
 * no VM boots here, so no network namespaces): a cluster without KubeVirt, an account without a
 * permission, a namespace quota that is full (seen in its status, or only at pod admission), bad
 * credentials. Each says what is wrong in one sentence, and a refused start leaves no object.
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseEnv } from "../../config";
import { log } from "../../log";
import { startTestDb } from "../../testing/test-db";
import { startMachines } from "../../compose/machines";
import { startFakeKubeApi, type FakeKubeApi, type FakeKubeApiOptions } from "../../testing/fake-kube-api";
import { isNoCapacity } from "../provider";
import { QuotaExceededError } from "./capacity";
import { KubeApi, KubePermissionError, KubeResourceMissingError, loadKubeConfig } from "./cluster";
import type { FleetSettings } from "./manifests";
import { kubevirtProvider } from "./provider";

const NAMESPACE = "labdeck-errors";
const SETTINGS: FleetSettings = {
  namespace: NAMESPACE,
  imageRepository: "registry.test/labdeck",
  overcommit: { cpu: 1, memory: 1 },
  platformLabels: { "app.kubernetes.io/name": "labdeck" },
};
/** Subnets of Service addresses; never used for hosts here (no VM boots). */
const SUBNETS = [120, 121, 122];

let fake: FakeKubeApi | null = null;
let dir: string | null = null;
afterEach(async () => {
  await fake?.stop();
  if (dir) await fs.rm(dir, { recursive: true, force: true });
  fake = null;
  dir = null;
});

async function providerOn(options: Partial<FakeKubeApiOptions>, kubeconfig?: (real: string) => Promise<string>) {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-kubevirt-errors-"));
  fake = await startFakeKubeApi({ namespace: NAMESPACE, dir, subnets: SUBNETS, ...options });
  const { config, namespace } = loadKubeConfig({ kubeconfig: kubeconfig ? await kubeconfig(fake.kubeconfig) : fake.kubeconfig });
  const api = new KubeApi(config, namespace);
  return { api, provider: kubevirtProvider({ api, settings: SETTINGS, log, imageHash: () => "0123456789abcdef", bootTimeoutMs: 20_000 }) };
}

const request = {
  sessionId: "cmerrors000000000000000001",
  labSlug: "hello-terminal",
  machines: ["controlplane", "node01", "node02"],
  image: "debian-base",
};
const leftovers = () =>
  ["virtualmachines", "secrets", "services", "networkpolicies", "network-attachment-definitions"].flatMap((k) => fake!.objects(k as never));

describe("kubevirt provider against a FAKE Kubernetes API: refusals", () => {
  it("a cluster without KubeVirt: one sentence at start and at create, nothing left behind", async () => {
    const { provider } = await providerOn({ serves: { kubevirt: false } });
    await expect(provider.preflight()).rejects.toThrow(
      /^KubeVirt is not installed in this cluster \(the kubevirt\.io API group is not served\)/,
    );
    const error = await provider.create(request).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KubeResourceMissingError);
    expect((error as Error).message).toMatch(/^KubeVirt is not installed/);
    expect(leftovers()).toEqual([]);
  });

  it("a cluster without CDI or Multus names what is missing", async () => {
    const { provider } = await providerOn({ serves: { cdi: false, multus: false } });
    await expect(provider.preflight()).rejects.toThrow(
      /CDI \(the Containerized Data Importer\) is not installed.*; Multus is not installed/,
    );
  });

  it("an account without a permission: preflight lists it, a create refused by RBAC says which verb on which resource", async () => {
    const { provider } = await providerOn({
      deny: ["create virtualmachines.kubevirt.io", "update virtualmachines/restart.subresources.kubevirt.io"],
    });
    await expect(provider.preflight()).rejects.toThrow(
      /lacks create virtualmachines\.kubevirt\.io, update virtualmachines\/restart\.subresources\.kubevirt\.io in namespace labdeck-errors: apply the Role in deploy\/kubernetes\/base\/rbac\.yaml/,
    );
    const error = await provider.create(request).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KubePermissionError);
    expect((error as Error).message).toMatch(
      /^Labdeck's Kubernetes account may not create virtualmachines\.kubevirt\.io in namespace labdeck-errors \(.*cannot create resource "virtualmachines"/,
    );
    expect(leftovers()).toEqual([]);
  });

  it("a full namespace quota (in its status): NoCapacity before any object is made", async () => {
    // Room for two debian-base VMs (749 MiB each with virt-launcher's overhead), not three.
    const { provider } = await providerOn({ quota: { "requests.memory": "1600Mi", pods: "10" } });
    await provider.preflight();
    const error = await provider.create(request).catch((e: unknown) => e);
    expect(isNoCapacity(error)).toBe(true);
    expect((error as QuotaExceededError).worded).toEqual({ key: "noCapacityQuota" });
    expect((error as QuotaExceededError).detail).toBe("labdeck/requests.memory: 0Mi used + 2247Mi > 1600Mi");
    // No object was made (the only POSTs were preflight's access reviews).
    expect(fake!.requests.filter((r) => r.method === "POST" && r.path.includes("/namespaces/"))).toEqual([]);
  });

  it("a quota seen only at pod admission (no status yet): the refused VMI ends the start with NoCapacity, and everything made is deleted", async () => {
    const { provider } = await providerOn({ quota: { "requests.memory": "700Mi" }, quotaWithoutStatus: true });
    const started = Date.now();
    const error = await provider.create(request).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QuotaExceededError);
    expect((error as QuotaExceededError).detail).toMatch(/is forbidden: exceeded quota: labdeck, requested: requests\.memory=749Mi/);
    expect(Date.now() - started).toBeLessThan(10_000); // not the boot timeout
    expect(leftovers()).toEqual([]);
    expect(fake!.objects("virtualmachineinstances")).toEqual([]);
  });

  it("wrong credentials: 401 in one sentence", async () => {
    const { provider } = await providerOn({}, async (real) => {
      const bad = path.join(dir!, "bad-kubeconfig");
      await fs.writeFile(bad, (await fs.readFile(real, "utf8")).replace(/"token":"[0-9a-f]+"/, '"token":"not-the-token"'));
      return bad;
    });
    await expect(provider.preflight()).rejects.toThrow(/the Kubernetes API refused Labdeck's credentials \(401/);
  });

  it("LABDECK_MACHINES=kubevirt: start-up refuses a cluster without KubeVirt and a missing image repository in one sentence, and starts on a complete cluster", async () => {
    const { db, stop } = await startTestDb();
    try {
      await providerOn({ serves: { kubevirt: false } });
      const env = (extra: Record<string, string>) =>
        parseEnv({
          NODE_ENV: "test",
          LABDECK_DATA_DIR: dir!,
          LABDECK_MACHINES: "kubevirt",
          LABDECK_KUBECONFIG: fake!.kubeconfig,
          LABDECK_POOL_SIZE: "0",
          ...extra,
        });
      await expect(startMachines(env({}), db, log)).rejects.toThrow(/^LABDECK_MACHINES=kubevirt needs LABDECK_KUBEVIRT_IMAGE_REPOSITORY/);
      await expect(startMachines(env({ LABDECK_KUBEVIRT_IMAGE_REPOSITORY: "registry.test/labdeck" }), db, log)).rejects.toThrow(
        /^KubeVirt is not installed in this cluster/,
      );
      await fake!.stop();
      fake = await startFakeKubeApi({ namespace: NAMESPACE, dir: dir!, subnets: SUBNETS });
      const machines = await startMachines(
        parseEnv({
          NODE_ENV: "test",
          LABDECK_DATA_DIR: dir!,
          LABDECK_MACHINES: "kubevirt",
          LABDECK_KUBECONFIG: fake.kubeconfig,
          LABDECK_POOL_SIZE: "0",
          LABDECK_KUBEVIRT_IMAGE_REPOSITORY: "registry.test/labdeck",
        }),
        db,
        log,
      );
      expect(machines.kind).toBe("kubevirt");
      expect(machines.provider.name).toBe("kubevirt");
      await machines.stop();
    } finally {
      await stop();
    }
  });
});
