/**
 * KubeVirt provider overhead per session start, against the FAKE Kubernetes API
 * (server/testing/fake-kube-api.ts): what the provider itself adds to a start, beside the baseline
 * measured in the same run, the fake's own "boot" (one netns sshd host per VM, which a real
 * cluster replaces by a CDI clone, a pod and a guest boot: ARCHITECTURE.md has those figures).
 *
 *   provider overhead = session start (create() until three machines answer SSH with their pinned
 *                       keys) - the slowest of its three fake boots
 *   its parts: key generation, manifests, API round trips (count, server-side ms), from a VMI
 *   Running to SSH answering; and destroy.
 *
 * Needs root (network namespaces): `flock /tmp/labdeck-test.lock npx tsx bench/kubevirt.ts [--rounds 5] [--json FILE]`
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import pino from "pino";
import { z } from "zod";
import { KubeApi, loadKubeConfig } from "../server/machines/kubevirt/cluster";
import { setObjects, type FleetSettings } from "../server/machines/kubevirt/manifests";
import { kubevirtProvider } from "../server/machines/kubevirt/provider";
import { generateEd25519 } from "../server/machines/keys";
import { startFakeKubeApi } from "../server/testing/fake-kube-api";
import { connectSsh } from "../server/ssh/connect";
import { benchFlags } from "./lib/flags";

const MACHINES = ["controlplane", "node01", "node02"];
/** Third octets of the fake VMs' addresses; unused by tests and the other benches. */
const SUBNETS = [110, 111, 112, 113, 114, 115];
const SETTINGS: FleetSettings = {
  namespace: "labdeck-bench",
  imageRepository: "registry.test/labdeck",
  overcommit: { cpu: 4, memory: 1 },
  platformLabels: { "app.kubernetes.io/name": "labdeck" },
};

const opts = benchFlags(
  z.strictObject({ rounds: z.coerce.number().int().min(1).max(50).default(5), json: z.string().min(1).optional() }),
  "usage: npx tsx bench/kubevirt.ts [--rounds N] [--json FILE]",
);

const ready: { apiMs: number; runningMs: number; sshMs: number }[] = [];
const sink = new Writable({
  write(chunk: Buffer, _encoding, done) {
    for (const line of chunk.toString("utf8").split("\n")) {
      if (!line.includes("kubevirt machines ready")) continue;
      const record = JSON.parse(line) as { apiMs: number; runningMs: number; sshMs: number };
      ready.push({ apiMs: record.apiMs, runningMs: record.runningMs, sshMs: record.sshMs });
    }
    done();
  },
});
const log = pino({ level: "info" }, sink);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const ms = (value: number) => `${Math.round(value)} ms`;

const dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-bench-kubevirt-"));
const fake = await startFakeKubeApi({ namespace: SETTINGS.namespace, dir, subnets: SUBNETS });
try {
  const { config, namespace } = loadKubeConfig({ kubeconfig: fake.kubeconfig });
  const provider = kubevirtProvider({
    api: new KubeApi(config, namespace),
    settings: SETTINGS,
    log,
    imageHash: () => "0123456789abcdef",
    bootTimeoutMs: 60_000,
  });

  // Pure parts, timed alone: the keys of one session (a client key, a host key per machine) and its manifests.
  let t = performance.now();
  const keys = [generateEd25519("client"), ...MACHINES.map((m) => generateEd25519(m))];
  const keygenMs = performance.now() - t;
  t = performance.now();
  setObjects(SETTINGS, {
    setId: "bench",
    labSlug: "bench",
    variant: "debian-base",
    imageHash: "0123456789abcdef",
    internet: false,
    machines: MACHINES.map((name, i) => ({ name, hostPrivateKey: keys[i + 1]!.privateKey, hostPublicKey: keys[i + 1]!.publicKey })),
    authorizedKeys: keys[0]!.publicKey,
  });
  const manifestsMs = performance.now() - t;

  const rounds: {
    startMs: number;
    bootMs: number;
    overheadMs: number;
    requests: number;
    apiServerMs: number;
    destroyMs: number;
    loginMs: number;
  }[] = [];
  for (let round = 0; round < opts.rounds; round++) {
    const sessionId = `bench${round}`;
    const firstRequest = fake.requests.length;
    const firstBoot = fake.bootMs.length;
    const started = performance.now();
    const machines = await provider.create({ sessionId, labSlug: "bench", machines: MACHINES, image: "debian-base" });
    const startMs = performance.now() - started;
    const bootMs = Math.max(...fake.bootMs.slice(firstBoot));
    const requests = fake.requests.slice(firstRequest);
    // Baseline in the same run: one SSH login to a machine that is up (what the provider's final check costs at least).
    t = performance.now();
    (await connectSsh(machines[0]!)).end();
    const loginMs = performance.now() - t;
    t = performance.now();
    await provider.destroy(sessionId, machines);
    const destroyMs = performance.now() - t;
    // The fake tears hosts down after answering the deletes: wait for it before the next round.
    while (fake.objects("virtualmachineinstances").length > 0 || fake.objects("virtualmachines").length > 0)
      await new Promise((r) => setTimeout(r, 50));
    rounds.push({
      startMs,
      bootMs,
      overheadMs: startMs - bootMs,
      requests: requests.filter((r) => !r.path.includes("watch")).length,
      apiServerMs: requests.reduce((s, r) => s + r.ms, 0),
      destroyMs,
      loginMs,
    });
    console.error(`round ${round + 1}/${opts.rounds}: start ${ms(startMs)}, fake boot ${ms(bootMs)}, overhead ${ms(startMs - bootMs)}`);
  }

  const summary = {
    rounds: rounds.length,
    sessionStartMsP50: median(rounds.map((r) => r.startMs)),
    fakeBootMsP50: median(rounds.map((r) => r.bootMs)),
    providerOverheadMsP50: median(rounds.map((r) => r.overheadMs)),
    providerOverheadMsMax: Math.max(...rounds.map((r) => r.overheadMs)),
    parts: {
      keygenMs,
      manifestsMs,
      apiRequestsPerStart: median(rounds.map((r) => r.requests)),
      apiServerSideMsPerStart: median(rounds.map((r) => r.apiServerMs)),
      createToStartedMsP50: median(ready.map((r) => r.apiMs)),
      runningToSshMsP50: median(ready.map((r) => r.sshMs)),
      sshLoginBaselineMsP50: median(rounds.map((r) => r.loginMs)),
    },
    destroyMsP50: median(rounds.map((r) => r.destroyMs)),
  };
  console.log(
    [
      `KubeVirt provider against the FAKE Kubernetes API, 3-machine debian-base sessions, ${rounds.length} rounds (p50):`,
      `  session start            ${ms(summary.sessionStartMsP50)}  (baseline: the fake's slowest VM boot ${ms(summary.fakeBootMsP50)})`,
      `  provider overhead        ${ms(summary.providerOverheadMsP50)}  (max ${ms(summary.providerOverheadMsMax)})`,
      `    keys (4 ed25519)       ${ms(keygenMs)}`,
      `    manifests              ${ms(manifestsMs)}`,
      `    API requests           ${summary.parts.apiRequestsPerStart} per start (+1 watch), ${ms(summary.parts.apiServerSideMsPerStart)} server-side in all`,
      `    create → VMs started   ${ms(summary.parts.createToStartedMsP50)}`,
      `    Running → pinned key   ${ms(summary.parts.runningToSshMsP50)}  (one full SSH login, for scale: ${ms(summary.parts.sshLoginBaselineMsP50)})`,
      `  destroy                  ${ms(summary.destroyMsP50)}`,
    ].join("\n"),
  );
  if (opts.json) await fs.writeFile(opts.json, JSON.stringify(summary, null, 2) + "\n");
} finally {
  await fake.stop();
  await fs.rm(dir, { recursive: true, force: true });
}
