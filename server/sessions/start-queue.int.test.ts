/**
 * Starts that the host has no room for wait in a visible queue and go on by themselves; a start's
 * stage is on its row for the page; a failed start ends its session with the reason. Real sshd
 * hosts (network namespaces) handed out by the static-hosts provider with exclusive allocation
 * (one group: a second learner finds the host full, as a full QEMU host would be), the lab's real
 * setup over SSH, embedded PostgreSQL.
 * Run under the shared lock: flock /tmp/labdeck-test.lock npx vitest run server/sessions/start-queue.int.test.ts
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { LabCatalog } from "../labs/catalog";
import { runLabSetup } from "../labs/setup";
import { writeStaticHostsFile } from "../testing/netns-hosts";
import type { MachineProvider } from "../machines/provider";
import { dbHostClaims, staticHostsProvider } from "../machines/static-hosts";
import { startTestStack, type TestStack } from "../testing/stack";
import { endSession, machineEndpoint, providerRefsInUse, startOrResumeSession, type StartRequest } from "./lab-sessions";
import { startView, type StartView } from "./start-progress";

const SUBNET = 114;
const LAB = "hello-terminal";
let stack: TestStack;
let exclusive: MachineProvider;
let labsDir: string;

beforeAll(async () => {
  stack = await startTestStack({ subnet: SUBNET });
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-queue-"));
  const file = path.join(dir, "hosts.json");
  await writeStaticHostsFile(stack.hosts, file, "exclusive");
  exclusive = staticHostsProvider({ file, groupsInUse: () => providerRefsInUse(stack.db, "static"), claims: dbHostClaims(stack.db) });
  // A copy of hello-terminal whose node01 setup takes a moment (the page shows it running) and a
  // lab whose setup fails.
  labsDir = path.join(dir, "labs");
  await fs.cp(path.resolve("labs", LAB), path.join(labsDir, LAB), { recursive: true });
  const slow = path.join(labsDir, LAB, "setup", "node01.sh");
  await fs.writeFile(slow, `sleep 2\n${await fs.readFile(slow, "utf8")}`);
  await fs.cp(path.resolve("labs", LAB), path.join(labsDir, "broken"), { recursive: true });
  await fs.writeFile(path.join(labsDir, "broken", "setup", "node02.sh"), "echo the disk is full >&2\nexit 3\n");
}, 180_000);
afterAll(async () => stack?.stop());
/** Every session a test started, with its provider: one test that fails must not leave the host full for the next. */
const started: { id: string; provider: MachineProvider }[] = [];
afterEach(async () => {
  for (const { id, provider } of started.splice(0)) {
    const row = await stack.db.labSession.findUnique({ where: { id } });
    if (row && row.state !== "ended") await endSession(stack.db, provider, id, "learner").catch(() => undefined);
  }
});

async function request(learnerId: string, slug = LAB): Promise<StartRequest> {
  return { learnerId, labSlug: slug, machines: ["controlplane", "node01", "node02"], image: "debian-base" };
}

/** Starts in the background like the lab page (`?async=1`): resolves with the session id once there is one. */
function startAsync(learnerId: string, slug = LAB, provider = exclusive): { id: Promise<string>; done: Promise<unknown> } {
  let onStarted: (id: string) => void = () => undefined;
  const id = new Promise<string>((resolve) => (onStarted = resolve));
  void id.then((sessionId) => started.push({ id: sessionId, provider }));
  const labs = new LabCatalog(labsDir);
  const done = request(learnerId, slug).then((req) =>
    startOrResumeSession(
      stack.db,
      provider,
      req,
      async (sessionId, onScript) =>
        runLabSetup(stack.pool, await labs.get(slug), (m) => machineEndpoint(stack.db, sessionId, m), undefined, onScript),
      { onStarted, queue: true },
    ),
  );
  done.catch(() => undefined);
  return { id, done };
}

/** Polls the start's view as the page does, collecting every distinct one, until `until` holds. */
async function follow(sessionId: string, until: (v: StartView) => boolean, timeoutMs = 60_000): Promise<StartView[]> {
  const seen: StartView[] = [];
  await vi.waitFor(
    async () => {
      const view = (await startView(stack.db, sessionId))!;
      const last = seen.at(-1);
      if (!last || last.state !== view.state || last.stage !== view.stage || last.detail !== view.detail || last.position !== view.position)
        seen.push(view);
      if (!until(view)) throw new Error(`start of ${sessionId} did not get there: ${JSON.stringify(seen)}`);
    },
    { timeout: timeoutMs, interval: 100 },
  );
  return seen;
}

describe("session starts: progress, queue, failure", () => {
  it("shows each stage of a start, the setup script that runs included, and where the machines came from", async () => {
    const a = startAsync("progress-learner");
    const id = await a.id;
    const seen = await follow(id, (v) => v.state === "ready");
    await a.done;
    // The slow script is what stays on the page once the fast ones are done (they start together).
    expect(seen.some((v) => v.stage === "setup" && v.detail === "node01.sh (node01)")).toBe(true);
    expect(seen.at(-1)).toMatchObject({ state: "ready", stage: null, source: "cold", error: null });
    await endSession(stack.db, exclusive, id, "learner");
  });

  it("queues starts beyond the host's room in order, shows their place, and starts them as room frees: no failure, no second session", async () => {
    const first = startAsync("q-first");
    const firstId = await first.id;
    await first.done;
    const second = startAsync("q-second");
    const secondId = await second.id;
    const queued = await follow(secondId, (v) => v.stage === "queued");
    expect(queued.at(-1)).toMatchObject({ state: "starting", stage: "queued", position: 1 });
    expect(queued.at(-1)!.detail).toBeTruthy(); // the host's words for why (no free group)
    const third = startAsync("q-third");
    const thirdId = await third.id;
    await follow(thirdId, (v) => v.stage === "queued" && v.position === 2);

    await endSession(stack.db, exclusive, firstId, "learner"); // room frees
    await follow(secondId, (v) => v.state === "ready", 60_000);
    expect((await startView(stack.db, thirdId))!).toMatchObject({ stage: "queued", position: 1 });
    await endSession(stack.db, exclusive, secondId, "learner");
    await follow(thirdId, (v) => v.state === "ready", 60_000);
    await Promise.all([second.done, third.done]);
    // Each learner has exactly the one session they started: the queue never retried with new ones.
    for (const learner of ["q-second", "q-third"]) expect(await stack.db.labSession.count({ where: { learnerId: learner } })).toBe(1);
    await endSession(stack.db, exclusive, thirdId, "learner");
  }, 180_000);

  it("holds starts beyond a lab's cap (PoolTarget.cap) in the queue until a session of the lab ends", async () => {
    await stack.db.poolTarget.create({ data: { labSlug: LAB, cap: 1 } });
    try {
      const shared = stack.provider; // shared allocation: the host has room; only the cap holds
      const a = startAsync("cap-a", LAB, shared);
      const aId = await a.id;
      await a.done;
      const b = startAsync("cap-b", LAB, shared);
      const bId = await b.id;
      const held = await follow(bId, (v) => v.stage === "queued");
      expect(held.at(-1)).toMatchObject({ detail: "labCap", position: 1 });
      await endSession(stack.db, shared, aId, "learner");
      await follow(bId, (v) => v.state === "ready", 60_000);
      await b.done;
      await endSession(stack.db, shared, bId, "learner");
    } finally {
      await stack.db.poolTarget.delete({ where: { labSlug: LAB } });
    }
  }, 120_000);

  it("a start whose setup fails ends its session as failed with the reason for the waiting page; the machines go back", async () => {
    const broken = startAsync("broken-learner", "broken");
    const id = await broken.id;
    await expect(broken.done).rejects.toThrow(/node02\.sh on node02: fail \(exit 3\): the disk is full/);
    const view = (await startView(stack.db, id))!;
    expect(view).toMatchObject({ state: "ended", stage: null });
    expect(view.error).toMatch(/the disk is full/);
    // The group was released: another learner starts at once (exclusive allocation, one group).
    const next = startAsync("after-broken");
    await next.done;
    await endSession(stack.db, exclusive, await next.id, "learner");
  }, 120_000);
});
