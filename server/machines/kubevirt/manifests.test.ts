/**
 * The objects a machine set gets on the fleet, per lab of labs/ (which covers every image
 * variant): golden files (golden/<slug>.yaml, `vitest -u` rewrites them after an intended change),
 * each object checked against the API types (api-types.ts, from the Kubernetes and KubeVirt API
 * references), and the properties the design rests on checked directly.
 */
import path from "node:path";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { listLabs } from "../../labs/load";
import { RECIPES } from "../images/recipe";
import { validateObject } from "./api-types";
import { quotaShortfalls } from "./capacity";
import {
  goldenDataVolume,
  INTERNET_EXCEPT,
  quotaUsage,
  setObjects,
  type FleetSettings,
  type KubeObject,
  type SetObjects,
} from "./manifests";
import { launcherOverheadMiB, sizeOf } from "./sizing";

const SETTINGS: FleetSettings = {
  namespace: "labdeck-machines",
  imageRepository: "registry.example.test/labdeck",
  storageClass: "fast-clones",
  overcommit: { cpu: 4, memory: 1 },
  platformLabels: { "app.kubernetes.io/name": "labdeck" },
  nameserver: "10.96.0.10",
};
/** Stand-ins for keys (the real ones are random per set; goldens must not be). */
const fixedKey = (name: string) => ({
  name,
  hostPrivateKey: `-----BEGIN OPENSSH PRIVATE KEY-----\nFIXTURE-HOST-KEY-OF-${name}\n-----END OPENSSH PRIVATE KEY-----\n`,
  hostPublicKey: `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI${Buffer.from(name.padEnd(24, "x")).toString("base64").replace(/=+$/, "")}`,
});
const SET_ID = "cmabcdefghij0123456789xyz";

function objectsOf(s: SetObjects): KubeObject[] {
  return [s.network, s.policy, ...s.machines.flatMap((m) => [m.secret, m.service, m.vm])];
}

const { labs, errors } = await listLabs(path.resolve("labs"));

describe("fleet manifests per lab", () => {
  it("loads every lab, and the labs cover every image variant", () => {
    expect(errors).toEqual([]);
    expect(new Set(labs.map((l) => l.manifest.image))).toEqual(new Set(Object.keys(RECIPES)));
    expect(Object.keys(RECIPES).map((v) => [v, sizeOf(v)])).toEqual([
      ["debian-base", { cores: 1, memoryMiB: 512, diskGiB: 8 }],
      ["k8s-v1.31", { cores: 2, memoryMiB: 2048, diskGiB: 12 }],
      ["kubespray-v2.26.0", { cores: 1, memoryMiB: 1024, diskGiB: 8 }],
    ]);
  });

  for (const lab of labs) {
    it(`${lab.slug} (${lab.manifest.image}${lab.manifest.network.internet ? ", internet" : ""}): golden objects, each valid against the API types`, async () => {
      const set = setObjects(SETTINGS, {
        setId: SET_ID,
        labSlug: lab.slug,
        variant: lab.manifest.image,
        imageHash: "0123456789abcdef",
        internet: lab.manifest.network.internet,
        machines: lab.manifest.machines.map(fixedKey),
        authorizedKeys: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFIXTUREPLATFORMKEY labdeck-session\n",
      });
      const objects = [...objectsOf(set), goldenDataVolume(SETTINGS, lab.manifest.image, "0123456789abcdef")];
      for (const object of objects) expect(validateObject(object), `${object.kind} ${object.metadata.name}`).toEqual([]);
      await expect(objects.map((o) => stringify(o, { lineWidth: 0 })).join("---\n")).toMatchFileSnapshot(`golden/${lab.slug}.yaml`);

      // Host keys travel in Secrets only, never in the VM object (readable by more people).
      for (const m of set.machines) {
        expect(JSON.stringify(m.vm)).not.toContain("PRIVATE KEY");
        expect(JSON.stringify(m.secret)).toContain(`FIXTURE-HOST-KEY-OF-${m.name}`);
        expect(JSON.stringify(set.machines.filter((o) => o !== m).map((o) => o.secret))).not.toContain(`FIXTURE-HOST-KEY-OF-${m.name}\\n`);
      }
      // Each machine its own eth1 address; all on one node (the bridge is per node).
      expect(new Set(set.machines.map((m) => m.eth1Address)).size).toBe(lab.manifest.machines.length);
      const policy = set.policy.spec as { egress: { to?: { ipBlock?: { except: string[] } }[] }[] };
      if (lab.manifest.network.internet) expect(policy.egress[0]!.to![0]!.ipBlock!.except).toEqual(INTERNET_EXCEPT);
      else expect(policy.egress).toEqual([]);
    });
  }
});

describe("the API types refuse what the API server would", () => {
  const base = setObjects(SETTINGS, {
    setId: SET_ID,
    labSlug: "x",
    variant: "debian-base",
    imageHash: "0123456789abcdef",
    internet: false,
    machines: [fixedKey("controlplane")],
    authorizedKeys: "k",
  });
  const vm = base.machines[0]!.vm;
  const edit = (object: KubeObject, change: (o: any) => void) => {
    const copy = structuredClone(object);
    change(copy);
    return validateObject(copy);
  };

  it("a VM with an unknown runStrategy, masquerade on a Multus network, a disk without volume, a misspelt field", () => {
    expect(edit(vm, (o) => (o.spec.runStrategy = "Sometimes"))[0]).toMatch(/spec\.runStrategy/);
    expect(edit(vm, (o) => (o.spec.template.spec.domain.devices.interfaces[1] = { name: "session", masquerade: {} })).join()).toMatch(
      /masquerade needs the pod network/,
    );
    expect(edit(vm, (o) => o.spec.template.spec.volumes.pop()).join()).toMatch(/disk cloudinit has no volume/);
    expect(edit(vm, (o) => (o.spec.template.spec.domain.cpu.core = 1)).join()).toMatch(/Unrecognized key.*core/);
    expect(edit(vm, (o) => (o.metadata.name = "LD_Upper")).join()).toMatch(/DNS-1123 label/);
    expect(edit(vm, (o) => (o.metadata.labels["labdeck.io/lab"] = "(warm pool)")).join()).toMatch(/label value/);
  });

  it("a warm pool set's objects are valid too (its lab slug is no label value)", () => {
    const pool = setObjects(SETTINGS, {
      setId: "pool-0123456789ab",
      labSlug: "(warm pool)",
      variant: "debian-base",
      imageHash: "0123456789abcdef",
      internet: false,
      machines: [fixedKey("node01")],
      authorizedKeys: "k",
    });
    for (const object of objectsOf(pool)) expect(validateObject(object), `${object.kind}`).toEqual([]);
    expect(pool.machines[0]!.vm.metadata.labels!["labdeck.io/lab"]).toBe("warm-pool");
  });

  it("a Service name that is not a DNS-1035 label, a bridge name over 15 characters, a bad quantity", () => {
    expect(edit(base.machines[0]!.service, (o) => (o.metadata.name = "1-starts-with-a-digit")).join()).toMatch(/DNS-1035/);
    expect(
      edit(
        base.network,
        (o) => (o.spec.config = JSON.stringify({ cniVersion: "0.3.1", type: "bridge", bridge: "a-bridge-name-too-long" })),
      ).join(),
    ).toMatch(/15 characters/);
    expect(edit(vm, (o) => (o.spec.template.spec.domain.resources.requests.memory = "512 MB")).join()).toMatch(/quantity/);
  });
});

describe("sizes and quota", () => {
  it("virt-launcher overhead by KubeVirt's formula; requests with overcommit", () => {
    expect(launcherOverheadMiB({ cores: 1, memoryMiB: 512 })).toBe(237);
    expect(launcherOverheadMiB({ cores: 2, memoryMiB: 2048 })).toBe(248);
    expect(quotaUsage({ overcommit: { cpu: 4, memory: 1 } }, "k8s-v1.31")).toEqual({
      cpuMilli: 500,
      memoryMiB: 2048 + 248,
      pods: 1,
      storageGiB: 12,
    });
    expect(quotaUsage({ overcommit: { cpu: 1, memory: 2 } }, "debian-base")).toEqual({
      cpuMilli: 1000,
      memoryMiB: 256 + 237,
      pods: 1,
      storageGiB: 8,
    });
  });

  it("a set fits a quota exactly, and one MiB more does not", () => {
    const usage = { cpuMilli: 750, memoryMiB: 3 * 749, storageGiB: 24, machines: 3 };
    const quota = (usedMemory: string) => ({
      metadata: { name: "labdeck" },
      status: {
        hard: { "requests.memory": "10Gi", "requests.cpu": "4", pods: "30" },
        used: { "requests.memory": usedMemory, "requests.cpu": "3250m", pods: "3" },
      },
    });
    expect(quotaShortfalls([quota(`${10 * 1024 - 3 * 749}Mi`)], usage)).toEqual([]);
    expect(quotaShortfalls([quota(`${10 * 1024 - 3 * 749 + 1}Mi`)], usage)).toEqual([
      `labdeck/requests.memory: ${10 * 1024 - 3 * 749 + 1}Mi used + 2247Mi > 10Gi`,
    ]);
  });
});
