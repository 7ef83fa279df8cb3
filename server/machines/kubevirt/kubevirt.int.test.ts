/**
 * The KubeVirt provider end to end against a FAKE Kubernetes API (server/testing/fake-kube-api.ts),
 * the one fake part: every VM it starts is a real sshd host in a network namespace with the host
 * key and authorized key from the VM's cloud-init Secret. The real provider, database, gateway
 * and grader run the hello-terminal lab on it; then reboot (running and powered off), reset, suspend
 * and resume, destroy and adoption after a restart. Needs root (netns): run under the test lock,
 * `flock /tmp/labdeck-test.lock npx vitest run server/machines/kubevirt/kubevirt.int.test.ts`.
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { log } from "../../log";
import {
  endSession,
  machineEndpoint,
  machinePoweredOff,
  resetMachine,
  restartMachine,
  resumeSession,
  suspendSession,
} from "../../sessions/lab-sessions";
import { startFakeKubeApi, type FakeKubeApi } from "../../testing/fake-kube-api";
import { startStack, type Stack } from "../../testing/stack";
import { TerminalTestClient } from "../../testing/terminal-client";
import { connectSsh } from "../../ssh/connect";
import { KubeApi, loadKubeConfig } from "./cluster";
import type { FleetSettings } from "./manifests";
import { generateEd25519 } from "../keys";
import { kubevirtProvider, type KubevirtProvider } from "./provider";
import { presentsHostKey } from "./ssh-probe";

const NAMESPACE = "labdeck-test";
/** Third octets of the fake VMs' addresses (10.213.S.0/24); unused by every other test (grep `subnet:` and `SUBNET =`). */
const SUBNETS = [100, 101, 102, 103, 104, 105, 106, 107, 108, 109];
const SETTINGS: FleetSettings = {
  namespace: NAMESPACE,
  imageRepository: "registry.test/labdeck",
  overcommit: { cpu: 4, memory: 1 },
  platformLabels: { "app.kubernetes.io/name": "labdeck" },
};

let dir: string;
let fake: FakeKubeApi;
let provider: KubevirtProvider;
let stack: Stack;
let sessionId: string;

function newProvider(): KubevirtProvider {
  const { config, namespace } = loadKubeConfig({ kubeconfig: fake.kubeconfig });
  return kubevirtProvider({
    api: new KubeApi(config, namespace),
    settings: SETTINGS,
    log,
    imageHash: () => "0123456789abcdef",
    bootTimeoutMs: 60_000,
  });
}

async function exec(name: string, command: string): Promise<string> {
  const endpoint = await machineEndpoint(stack.db, sessionId, name);
  if (!endpoint) throw new Error(`no endpoint for ${name}`);
  const client = await connectSsh(endpoint);
  try {
    return await new Promise<string>((resolve, reject) => {
      client.exec(command, (error, stream) => {
        if (error) return reject(error);
        let out = "";
        stream.on("data", (d: Buffer) => (out += d.toString("utf8")));
        stream.stderr.on("data", (d: Buffer) => (out += d.toString("utf8")));
        stream.on("close", () => resolve(out.trim()));
      });
    });
  } finally {
    client.end();
  }
}

const vmOf = (machine: string) =>
  fake
    .objects("virtualmachines")
    .find((vm) => vm.metadata.annotations["labdeck.io/session-id"] === sessionId && vm.metadata.labels["labdeck.io/machine"] === machine)!;
const vmiUid = (machine: string) =>
  fake.objects("virtualmachineinstances").find((vmi) => vmi.metadata.name === vmOf(machine).metadata.name)?.metadata.uid as
    string | undefined;

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-kubevirt-"));
  // Watches end every 2 s (a real API server's after minutes): waits must list and watch again.
  fake = await startFakeKubeApi({
    namespace: NAMESPACE,
    dir,
    subnets: SUBNETS,
    quota: { "requests.memory": "20Gi", "requests.cpu": "8", pods: "20" },
    watchTimeoutMs: 2_000,
  });
  provider = newProvider();
  await provider.preflight();
  stack = await startStack({ provider: () => provider, grader: { intervalMs: 60_000 } });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  await fake?.stop();
  await fs.rm(dir, { recursive: true, force: true });
});

describe("kubevirt provider against a FAKE Kubernetes API (VMs are real netns sshd hosts)", () => {
  it("starts hello-terminal's machines from cloud-init identities; the learner's terminal and the grader pass both steps", async () => {
    const started = Date.now();
    sessionId = await stack.startSession("fleet-learner", "hello-terminal");
    log.info({ ms: Date.now() - started }, "kubevirt test: session ready");
    expect(fake.objects("virtualmachines")).toHaveLength(3);
    expect(fake.objects("networkpolicies")).toHaveLength(1);
    expect(fake.objects("network-attachment-definitions")).toHaveLength(1);
    expect(fake.objects("datavolumes").map((d) => d.metadata.name)).toEqual(["labdeck-golden-debian-base-0123456789abcdef"]);
    // The machines' endpoints are their Services' addresses, with the keys cloud-init carried.
    const rows = await stack.db.machine.findMany({ where: { sessionId }, orderBy: { name: "asc" } });
    const services = new Map(fake.objects("services").map((s) => [s.metadata.labels["labdeck.io/machine"], s.spec.clusterIP]));
    expect(rows.map((r) => [r.name, r.host, r.port])).toEqual(["controlplane", "node01", "node02"].map((n) => [n, services.get(n), 22]));
    for (const row of rows) {
      const secret = fake.objects("secrets").find((s) => s.metadata.labels["labdeck.io/machine"] === row.name)!;
      expect(Buffer.from(secret.data.userdata, "base64").toString("utf8")).toContain(`ed25519_public: ${row.hostKey}`);
      expect(row.privateKey).not.toContain("PRIVATE KEY"); // sealed at rest
    }
    expect(await exec("node02", "hostname")).toBe("node02");
    // The provider's readiness probe tells the pinned host key from another one.
    await presentsHostKey(rows[0]!, 5_000);
    await expect(presentsHostKey({ ...rows[0]!, hostKey: generateEd25519("other").publicKey }, 5_000)).rejects.toThrow(
      /another host key than the pinned one/,
    );

    // The learner types into node01's terminal; the grader passes the step.
    const node01 = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(sessionId, "node01") });
    await node01.waitFor((c) => c.messages.some((m) => m.type === "ready"), 15_000, "ready");
    node01.input("echo こんにちは > /root/hello.txt && echo wrote-$((6*7))\r");
    await node01.waitForText("wrote-42", 15_000);
    expect((await stack.grader.checkNow(sessionId)).steps.map((s) => s.state)).toEqual(["done", "current"]);
    const node02 = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(sessionId, "node02") });
    await node02.waitFor((c) => c.messages.some((m) => m.type === "ready"), 15_000, "ready");
    node02.input("hostname > /root/whoami.txt && echo saved-$((6*7))\r");
    await node02.waitForText("saved-42", 15_000);
    const progress = await stack.grader.checkNow(sessionId);
    expect(progress.steps.map((s) => s.state)).toEqual(["done", "done"]);
    node01.ws.close();
    node02.ws.close();
  });

  it("a guest that powered itself off is stopped for the provider; the start button (reboot) brings it back with its pinned host key", async () => {
    await fake.guestPowerOff(vmOf("node01").metadata.name);
    expect(await machinePoweredOff(stack.db, provider, sessionId, "node01")).toBe(true);
    expect(
      (await provider.health(sessionId, await stack.db.machine.findMany({ where: { sessionId }, orderBy: { name: "asc" } }))).map(
        (h) => h.state,
      ),
    ).toEqual(["running", "stopped", "running"]);
    expect(await restartMachine(stack.db, provider, sessionId, "node01")).toBe(true);
    expect(await machinePoweredOff(stack.db, provider, sessionId, "node01")).toBe(false);
    expect(await exec("node01", "hostname")).toBe("node01");
  });

  it("reboot of a running machine is a restart with grace 0: a new VMI, the same address and host key", async () => {
    const before = vmiUid("node02");
    const host = (await machineEndpoint(stack.db, sessionId, "node02"))!.host;
    const restarts = fake.requests.filter((r) => r.path.endsWith("/restart")).length;
    expect(await restartMachine(stack.db, provider, sessionId, "node02")).toBe(true);
    expect(fake.requests.filter((r) => r.path.endsWith("/restart")).length).toBe(restarts + 1);
    expect(vmiUid("node02")).not.toBe(before);
    expect((await machineEndpoint(stack.db, sessionId, "node02"))!.host).toBe(host);
    expect(await exec("node02", "hostname")).toBe("node02");
  });

  it("reset gives a fresh machine (the VM made again from its spec) with the same identity, then the lab's setup runs", async () => {
    await exec("node01", "echo mine > /root/learner-file");
    const vmUid = vmOf("node01").metadata.uid;
    let setupRan = false;
    expect(await resetMachine(stack.db, provider, sessionId, "node01", async () => void (setupRan = true))).toBe(true);
    expect(setupRan).toBe(true);
    expect(vmOf("node01").metadata.uid).not.toBe(vmUid);
    expect(await exec("node01", "cat /root/learner-file 2>&1; hostname")).toMatch(/No such file[\s\S]*node01$/);
  });

  it("suspend stops every VMI, keeping VMs, Secrets and Services; resume starts them and the machines answer as before", async () => {
    expect(await suspendSession(stack.db, provider, sessionId)).toBe(true);
    expect(
      fake
        .objects("virtualmachineinstances")
        .filter((v) => v.metadata.labels["labdeck.io/session"] === vmOf("node01").metadata.labels["labdeck.io/session"]),
    ).toEqual([]);
    expect(fake.objects("virtualmachines")).toHaveLength(3);
    await resumeSession(stack.db, provider, sessionId);
    expect(await exec("controlplane", "hostname")).toBe("controlplane");
  });

  it("a restarted platform adopts the sessions the database keeps and deletes the others' objects", async () => {
    const spare = await provider.create({
      sessionId: "pool-0123456789ab",
      labSlug: "(warm pool)",
      machines: ["node01"],
      image: "debian-base",
    });
    expect(spare[0]!.providerRef).toBe("pool-0123456789ab/node01");
    const restarted = newProvider();
    const report = await restarted.adoptOrCleanup({ keep: (id) => id === sessionId });
    expect(report).toEqual({ adopted: [sessionId], cleaned: ["pool-0123456789ab"] });
    // The fake, like a cluster, removes a deleted VM after its VMI is gone.
    await expect.poll(() => fake.objects("virtualmachines").length, { timeout: 10_000 }).toBe(3);
    expect(fake.objects("secrets").every((s) => s.metadata.annotations["labdeck.io/session-id"] === sessionId)).toBe(true);
  });

  it("ending the session deletes every object it had", async () => {
    await endSession(stack.db, provider, sessionId, "learner");
    for (const kind of [
      "virtualmachines",
      "virtualmachineinstances",
      "secrets",
      "services",
      "networkpolicies",
      "network-attachment-definitions",
    ] as const) {
      await expect.poll(() => fake.objects(kind).length, { timeout: 10_000 }).toBe(0);
    }
  });
});
