/**
 * Recordings on real parts: sshd hosts in network namespaces with the terminal holder, the
 * embedded PostgreSQL, the gateway over a real WebSocket, the real grader and the hello-terminal
 * lab. A scripted session (commands typed, a step unlocks, the terminal resized) must produce an
 * asciicast v2 file that parses line by line, whose output is byte for byte what the browser got,
 * with the step-unlock marker between the command that passed the step and the next one; the
 * recording route answers only the learner, the instructors of a live cohort and admins.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { parseEnv } from "../config";
import { setServices } from "../compose/services";
import { createUserWithPassword, type UserView } from "../auth/users";
import { startTestStack, type TestStack } from "../testing/stack";
import { signInCookie } from "../testing/sign-in";
import { TerminalTestClient } from "../testing/terminal-client";
import { refuseUnbuiltImage } from "../machines/qemu/image-status";
import type { Progress } from "../grader/progress";
import * as listRoute from "@/app/api/sessions/[id]/recordings/route";
import * as castRoute from "@/app/api/sessions/[id]/recordings/[machine]/route";

/** Unused by every other test (grep `subnet:` in server/ and e2e/). */
const SUBNET = 71;
const LAB = "hello-terminal";
const PASSWORD = "correct horse battery";

let stack: TestStack;
let sessionId: string;
const users = {} as Record<"owner" | "otherLearner" | "instructor" | "endedInstructor" | "admin", UserView>;
const cookies = {} as Record<keyof typeof users | "anonymous", string>;
/** What the browser received on node01, in order. */
let received: Buffer;

const signIn = (email: string) => signInCookie(stack.auth, email, PASSWORD);

function get(actor: keyof typeof cookies, machine?: string): Promise<Response> {
  const path = `/api/sessions/${sessionId}/recordings${machine ? `/${machine}` : ""}`;
  const request = new Request(`http://127.0.0.1${path}`, { headers: cookies[actor] ? { cookie: cookies[actor] } : {} });
  return machine
    ? castRoute.GET(request, { params: Promise.resolve({ id: sessionId, machine }) })
    : listRoute.GET(request, { params: Promise.resolve({ id: sessionId }) });
}

/** A shell prompt at the very end of the output: the last command is done and the shell waits. */
const PROMPT_AT_END = /[#$] $/;

beforeAll(async () => {
  stack = await startTestStack({ subnet: SUBNET, grader: { intervalMs: 120_000 } });
  const env = parseEnv({ NODE_ENV: "test", LABDECK_DATA_DIR: "/nonexistent", HOST: "127.0.0.1", PORT: "3000" });
  setServices({ ...stack, env, refuseUnbuiltImage: (lab) => refuseUnbuiltImage({ provider: stack.provider, env }, lab) });
  const make = (key: string, role: "learner" | "instructor" | "admin") =>
    createUserWithPassword(stack.db, stack.auth, { email: `${key.toLowerCase()}@example.test`, name: key, role, password: PASSWORD });
  users.owner = await make("owner", "learner");
  users.otherLearner = await make("otherLearner", "learner");
  users.instructor = await make("instructor", "instructor");
  users.endedInstructor = await make("endedInstructor", "instructor");
  users.admin = await make("admin", "admin");
  const live = await stack.db.cohort.create({ data: { name: "live", labs: [LAB] } });
  const ended = await stack.db.cohort.create({ data: { name: "ended", labs: [LAB], endedAt: new Date() } });
  await stack.db.cohortMember.createMany({
    data: [
      { cohortId: live.id, userId: users.owner.id, role: "learner" },
      { cohortId: live.id, userId: users.instructor.id, role: "instructor" },
      { cohortId: ended.id, userId: users.owner.id, role: "learner" },
      { cohortId: ended.id, userId: users.endedInstructor.id, role: "instructor" },
    ],
  });
  cookies.anonymous = "";
  for (const key of Object.keys(users) as (keyof typeof users)[]) cookies[key] = await signIn(users[key].email);

  // The scripted session: type on node01, the first step unlocks (nudged by Enter), type more, resize.
  sessionId = await stack.startSession(users.owner.id, LAB);
  stack.grader.start();
  const client = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(sessionId, "node01"), cols: 100, rows: 30 });
  await client.waitFor((c) => c.messages.some((m) => m.type === "status" && m.state === "connected"), 20_000);
  // The grader's first poll of the session is over (run recorded, claim released): the step can
  // only pass by the nudge of the command below.
  const polled = async () =>
    (await stack.db.checkRun.count({ where: { sessionId } })) > 0 &&
    (await stack.db.labSession.findUniqueOrThrow({ where: { id: sessionId } })).checkUntil === null;
  await vi.waitFor(
    async () => {
      if (!(await polled())) throw new Error("the grader's first poll of the session is not over");
    },
    { timeout: 30_000, interval: 50 },
  );
  const passed = new Promise<void>((resolve) => {
    const off = stack.bus.onProgress(sessionId, (p: Progress) => {
      if (p.steps[0]?.state !== "done") return;
      off();
      resolve();
    });
  });
  client.input("echo こんにちは > /root/hello.txt; echo before-unlock\r");
  await passed;
  // The marker's time is the completion's, written before the progress was published: the next
  // command, typed after it, comes later on the recording's clock.
  expect(await stack.db.stepCompletion.count({ where: { sessionId } })).toBe(1);
  client.input("printf 'after-%s\\n' unlock; seq 1 2000 | tail -n 3\r");
  await client.waitFor((c) => Buffer.concat(c.chunks).includes("after-unlock\r\n"), 10_000);
  client.send({ type: "resize", cols: 120, rows: 40 });
  client.input("echo 日本語の出力 | cat\r");
  await client.waitFor((c) => Buffer.concat(c.chunks).toString("utf8").includes("日本語の出力\r\n"), 10_000);
  await client.waitFor((c) => PROMPT_AT_END.test(c.text().split("日本語の出力\r\n").at(-1)!), 10_000, "the prompt after the last command");
  await stack.recorder.flushAll();
  received = Buffer.concat(client.chunks);
  expect(client.gaps).toEqual([]);
  await client.close();
}, 180_000);

afterAll(async () => {
  await stack?.stop();
});

describe("a scripted session's recording", () => {
  let lines: unknown[];

  beforeAll(async () => {
    const response = await get("owner", "node01");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^application\/x-asciicast/);
    const text = await response.text();
    expect(text.endsWith("\n")).toBe(true);
    lines = text
      .slice(0, -1)
      .split("\n")
      .map((line) => JSON.parse(line) as unknown);
  });

  it("parses as asciicast v2 line by line", () => {
    const [header, ...events] = lines as [Record<string, unknown>, ...unknown[][]];
    expect(header).toMatchObject({ version: 2, width: 100, height: 30 });
    expect(typeof header.timestamp).toBe("number");
    let last = 0;
    for (const e of events) {
      expect(e).toHaveLength(3);
      expect(typeof e[0]).toBe("number");
      expect(e[0] as number).toBeGreaterThanOrEqual(last);
      last = e[0] as number;
      expect(["o", "r", "m"]).toContain(e[1]);
      expect(typeof e[2]).toBe("string");
    }
    expect(events.filter((e) => e[1] === "r").map((e) => e[2])).toEqual(["120x40"]);
  });

  it("replays exactly the bytes the browser received", () => {
    const events = lines.slice(1) as [number, string, string][];
    const output = events
      .filter((e) => e[1] === "o")
      .map((e) => e[2])
      .join("");
    expect(received.length).toBeGreaterThan(100);
    expect(Buffer.from(output, "utf8").equals(received)).toBe(true);
  });

  it("carries the step-unlock marker after the command that passed the step and before the next", () => {
    const events = lines.slice(1) as [number, string, string][];
    const markers = events.map((e, i) => ({ e, i })).filter(({ e }) => e[1] === "m");
    expect(markers.map(({ e }) => e[2])).toEqual(["✓ node01 にファイルを作る"]);
    const output = (upTo: number) =>
      events
        .slice(0, upTo)
        .filter((e) => e[1] === "o")
        .map((e) => e[2])
        .join("");
    const at = markers[0]!.i;
    expect(output(at)).toContain("before-unlock\r\n");
    expect(output(at)).not.toContain("after-unlock\r\n");
    expect(output(events.length)).toContain("after-unlock\r\n");
  });

  it("is listed with its size and the session's markers", async () => {
    const response = await get("owner");
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      recordings: { machine: string; bytes: number }[];
      markers: { label: string; kind: string }[];
    };
    expect(body.recordings.find((r) => r.machine === "node01")?.bytes).toBe(received.length);
    expect(body.markers).toEqual([expect.objectContaining({ kind: "step", label: "✓ node01 にファイルを作る" })]);
  });
});

describe("the recording routes' authorization", () => {
  const EXPECT = { anonymous: 401, owner: 200, otherLearner: 404, instructor: 200, endedInstructor: 403, admin: 200 } as const;
  for (const [actor, status] of Object.entries(EXPECT) as [keyof typeof cookies, number][]) {
    it(`${actor}: ${status}`, async () => {
      expect((await get(actor)).status).toBe(status);
      expect((await get(actor, "node01")).status).toBe(status);
    });
  }

  it("a machine without a recording or a bad name is 404", async () => {
    expect((await get("owner", "nosuchmachine")).status).toBe(404);
    expect((await get("owner", "..%2F")).status).toBe(404);
  });
});
