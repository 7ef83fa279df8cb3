/**
 * Exam mode end to end on real parts, without a browser: sshd hosts in network namespaces, the
 * embedded PostgreSQL, better-auth sign-ins, the real route handlers and the terminal gateway over
 * a real WebSocket. The practice exam (labs/exam-warmup: no reboot tasks, so netns hosts do) is
 * started through the lab route; its clock is the server's; while it runs nobody gets a check
 * result or a hint and the grader leaves it alone; a hand-in closes input everywhere (an open write
 * socket closes with inputClosed, new tokens are read-only, routes that act on machines answer
 * 409); the scoring gives partial credit, resumes after a process died holding it, and runs each
 * check once. The reboot phase on real VMs: scoring.vm.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseEnv } from "../config";
import { setServices } from "../compose/services";
import { createUserWithPassword, type UserView } from "../auth/users";
import { refuseUnbuiltImage } from "../machines/qemu/image-status";
import { markerLabel, sessionMarkers } from "../recordings/asciicast";
import { startClock, submitExam } from "./attempts";
import { previewAccess } from "../preview/access";
import { machineEndpoint } from "../sessions/lab-sessions";
import { signInCookie } from "../testing/sign-in";
import { startTestStack, type TestStack } from "../testing/stack";
import { TerminalTestClient } from "../testing/terminal-client";
import { CloseCode } from "../terminal/protocol";
import { signTerminalToken } from "../terminal/token";
import * as labSessionRoute from "@/app/api/labs/[slug]/session/route";
import * as examRoute from "@/app/api/sessions/[id]/exam/route";
import * as marksRoute from "@/app/api/sessions/[id]/exam/marks/route";
import * as taskRoute from "@/app/api/sessions/[id]/exam/task/route";
import * as submitRoute from "@/app/api/sessions/[id]/exam/submit/route";
import * as resultRoute from "@/app/api/sessions/[id]/exam/result/route";
import * as hintRoute from "@/app/api/sessions/[id]/hints/[stepId]/route";
import * as tokensRoute from "@/app/api/sessions/[id]/terminal-tokens/route";
import * as tabsRoute from "@/app/api/sessions/[id]/tabs/route";
import * as cohortResultsRoute from "@/app/api/cohorts/[id]/exams/[slug]/results/route";

const ORIGIN = "http://127.0.0.1:3000";
const PASSWORD = "correct horse battery";
const EXAM = "exam-warmup";

let stack: TestStack;
const users = {} as Record<"owner" | "other" | "admin" | "late" | "cohorted", UserView>;
const cookies = {} as Record<"owner" | "other" | "admin" | "late" | "cohorted" | "anonymous", string>;
let sessionId: string;

function request(who: keyof typeof cookies, path: string, init: RequestInit = {}): Request {
  const headers = new Headers(init.headers);
  if (cookies[who]) headers.set("cookie", cookies[who]);
  headers.set("origin", ORIGIN);
  if (typeof init.body === "string") headers.set("content-type", "application/json");
  return new Request(`${ORIGIN}${path}`, { ...init, headers });
}
const params = <T extends object>(p: T) => ({ params: Promise.resolve(p) });
const view = async (who: keyof typeof cookies = "owner") =>
  examRoute.GET(request(who, `/api/sessions/${sessionId}/exam`), params({ id: sessionId }));
const run = async (machine: string, script: string) => {
  const endpoint = await machineEndpoint(stack.db, sessionId, machine);
  const result = await stack.pool.run(endpoint!, script, 20);
  expect(result.outcome, result.output).toBe("pass");
};

beforeAll(async () => {
  stack = await startTestStack({ subnet: 141, terminalAuth: "sign-in" });
  const env = parseEnv({ NODE_ENV: "test", LABDECK_DATA_DIR: "/nonexistent", HOST: "127.0.0.1", PORT: "3000" });
  setServices({ ...stack, env, refuseUnbuiltImage: (lab) => refuseUnbuiltImage({ provider: stack.provider, env }, lab) });
  for (const [key, role] of [
    ["owner", "learner"],
    ["other", "learner"],
    ["admin", "admin"],
    ["late", "learner"],
    ["cohorted", "learner"],
  ] as const) {
    users[key] = await createUserWithPassword(stack.db, stack.auth, { email: `${key}@example.test`, name: key, role, password: PASSWORD });
    cookies[key] = await signInCookie(stack.auth, users[key].email, PASSWORD);
  }
  cookies.anonymous = "";
  const started = await labSessionRoute.POST(request("owner", `/api/labs/${EXAM}/session`, { method: "POST" }), params({ slug: EXAM }));
  expect(started.status).toBe(200);
  sessionId = ((await started.json()) as { sessionId: string }).sessionId;
}, 180_000);

afterAll(async () => {
  await stack?.stop();
}, 60_000);

describe("while the exam runs", () => {
  it("the clock is the server's: a watcher looking does not start it; the learner opening it does (deadline = then + 15 min); the view has no checks, hints or solutions", async () => {
    const watched = (await (await view("admin")).json()) as { state: string; deadline: string | null };
    expect([watched.state, watched.deadline]).toEqual(["starting", null]);
    const response = await view();
    expect(response.status).toBe(200);
    const body = (await response.json()) as Record<string, unknown> & { tasks: Record<string, unknown>[]; deadline: string };
    const session = await stack.db.labSession.findUniqueOrThrow({ where: { id: sessionId } });
    expect(session.gradedAtEnd).toBe(true);
    expect(body.state).toBe("running");
    const attempt = await stack.db.examAttempt.findUniqueOrThrow({ where: { sessionId } });
    expect(attempt.startedAt!.getTime()).toBeGreaterThanOrEqual(session.readyAt!.getTime());
    expect(Math.abs(attempt.startedAt!.getTime() - Date.now())).toBeLessThan(10_000);
    expect(new Date(body.deadline).getTime()).toBe(attempt.startedAt!.getTime() + 15 * 60_000);
    // A reload does not move it.
    expect(((await (await view()).json()) as { deadline: string }).deadline).toBe(body.deadline);
    expect(body.tasks.map((t) => [t.id, t.points])).toEqual([
      ["greeting", 30],
      ["hostname", 30],
      ["permissions", 40],
    ]);
    expect(Object.keys(body.tasks[0]!).sort()).toEqual(["id", "machine", "points", "textMarkdown", "title"]);
    expect(JSON.stringify(body)).not.toMatch(/check\.sh|solution|chmod 1777/);
  });

  it("anonymous 401, another learner 404, an admin may watch", async () => {
    expect((await view("anonymous")).status).toBe(401);
    expect((await view("other")).status).toBe(404);
    expect((await view("admin")).status).toBe(200);
    const mark = await marksRoute.PUT(
      request("other", `/api/sessions/${sessionId}/exam/marks`, {
        method: "PUT",
        body: JSON.stringify({ taskId: "greeting", flagged: true }),
      }),
      params({ id: sessionId }),
    );
    expect(mark.status).toBe(404);
  });

  it("the grader does not grade it and no hint is given", async () => {
    await run("node01", "echo こんにちは > /root/greeting.txt");
    await stack.grader.checkNow(sessionId);
    expect(await stack.db.checkRun.count({ where: { sessionId } })).toBe(0);
    expect(await stack.db.stepCompletion.count({ where: { sessionId } })).toBe(0);
    const hint = await hintRoute.POST(
      request("owner", `/api/sessions/${sessionId}/hints/greeting`, { method: "POST" }),
      params({ id: sessionId, stepId: "greeting" }),
    );
    expect(hint.status).toBe(404);
  });

  it("marks are the learner's own; an unknown task is 404, a malformed body 400", async () => {
    const put = (body: unknown) =>
      marksRoute.PUT(
        request("owner", `/api/sessions/${sessionId}/exam/marks`, { method: "PUT", body: JSON.stringify(body) }),
        params({ id: sessionId }),
      );
    expect(await (await put({ taskId: "hostname", flagged: true })).json()).toEqual({
      marks: { hostname: { flagged: true, done: false } },
    });
    expect(await (await put({ taskId: "hostname", done: true })).json()).toEqual({ marks: { hostname: { flagged: true, done: true } } });
    expect((await put({ taskId: "nope", done: true })).status).toBe(404);
    expect((await put({ taskId: "hostname", done: "yes" })).status).toBe(400);
    expect((await put({ taskId: "hostname", extra: 1 })).status).toBe(400);
  });

  it("task switches are recorded once each (not twice in a row)", async () => {
    const go = (taskId: string) =>
      taskRoute.POST(
        request("owner", `/api/sessions/${sessionId}/exam/task`, { method: "POST", body: JSON.stringify({ taskId }) }),
        params({ id: sessionId }),
      );
    for (const task of ["greeting", "greeting", "permissions", "greeting"]) expect((await go(task)).status).toBe(204);
    const switches = await stack.db.examTaskSwitch.findMany({ where: { attempt: { sessionId } }, orderBy: { at: "asc" } });
    expect(switches.map((s) => s.taskId)).toEqual(["greeting", "permissions", "greeting"]);
    // The recording's markers: the replay jumps to where the learner moved to each task.
    const markers = await sessionMarkers(
      stack.db,
      sessionId,
      new Map([
        ["greeting", "あいさつ"],
        ["permissions", "共有"],
      ]),
    );
    expect(markers.map(markerLabel)).toEqual(["→ あいさつ", "→ 共有", "→ あいさつ"]);
  });
});

describe("hand-in and scoring", () => {
  it("a hand-in closes input on an open write socket (inputClosed), hands out read tokens, refuses machine actions, and scores with partial credit", async () => {
    await run("controlplane", "mkdir -p /srv/shared && chmod 755 /srv/shared"); // exists, wrong mode: 20 of 40
    const token = signTerminalToken(stack.secret, { sid: sessionId, m: "node01", mode: "write", sub: users.owner.id });
    const socket = await TerminalTestClient.connect(stack.wsUrl, { token }, { cookie: cookies.owner });
    try {
      await socket.waitFor((c) => c.messages.some((m) => m.type === "status" && m.state === "connected"), 20_000, "connected");
      const submitted = await submitRoute.POST(
        request("owner", `/api/sessions/${sessionId}/exam/submit`, { method: "POST" }),
        params({ id: sessionId }),
      );
      expect(submitted.status).toBe(202);
      expect(await socket.waitForClose(10_000)).toEqual({ code: CloseCode.forbidden, reason: "inputClosed" });
    } finally {
      await socket.close();
    }
    const again = await TerminalTestClient.connect(stack.wsUrl, { token }, { cookie: cookies.owner });
    expect(await again.waitForClose(10_000)).toEqual({ code: CloseCode.forbidden, reason: "inputClosed" });
    const tokens = (await (
      await tokensRoute.GET(request("owner", `/api/sessions/${sessionId}/terminal-tokens`), params({ id: sessionId }))
    ).json()) as {
      mode: string;
    };
    expect(tokens.mode).toBe("read");
    const tab = await tabsRoute.POST(
      request("owner", `/api/sessions/${sessionId}/tabs`, { method: "POST", body: JSON.stringify({ machine: "node01" }) }),
      params({ id: sessionId }),
    );
    expect(tab.status).toBe(409);
    // Previews: the learner's own pages on the machines are no way back in; a watcher still looks.
    const grant = async (who: "owner" | "admin", access: "owner" | "watch") => {
      const si = (await stack.db.session.findFirstOrThrow({ where: { userId: users[who].id } })).id;
      return previewAccess(stack.db)({
        k: "grant",
        sid: sessionId,
        m: "node01",
        p: 8080,
        sub: users[who].id,
        si,
        access,
        exp: Date.now() + 60_000,
      });
    };
    expect(await grant("owner", "owner")).toBeNull();
    expect(await grant("admin", "watch")).toBe("watch");
    const resubmit = await submitRoute.POST(
      request("owner", `/api/sessions/${sessionId}/exam/submit`, { method: "POST" }),
      params({ id: sessionId }),
    );
    expect(resubmit.status).toBe(409);

    await stack.exams.scoreNow(sessionId);
    const result = await resultRoute.GET(request("owner", `/api/sessions/${sessionId}/exam/result`), params({ id: sessionId }));
    expect(result.status).toBe(200);
    const body = (await result.json()) as {
      score: number;
      maxScore: number;
      passed: boolean;
      submittedBy: string;
      tasks: {
        id: string;
        points: number;
        solution: string;
        timeMs: number;
        checks: { id: string; points: number; now: { outcome: string; output: string } }[];
      }[];
    };
    expect([body.score, body.maxScore, body.passed, body.submittedBy]).toEqual([50, 100, false, "learner"]);
    const tasks = Object.fromEntries(body.tasks.map((t) => [t.id, t]));
    expect(tasks.greeting!.points).toBe(30);
    expect(tasks.hostname!.points).toBe(0);
    expect(tasks.hostname!.checks[0]!.now.output).toContain("/root/hostname.txt がありません");
    expect(tasks.permissions!.checks.map((c) => [c.id, c.points, c.now.outcome])).toEqual([
      ["exists", 20, "pass"],
      ["mode", 0, "fail"],
    ]);
    expect(tasks.permissions!.checks[1]!.now.output).toContain("755");
    expect(tasks.permissions!.solution).toContain("chmod 1777");
    expect(tasks.greeting!.timeMs).toBeGreaterThan(0);
    const attempt = await stack.db.examAttempt.findUniqueOrThrow({ where: { sessionId } });
    expect([attempt.state, attempt.score, attempt.passed]).toEqual(["scored", 50, false]);
  }, 120_000);

  it("the result is not there for another learner, nor before scoring", async () => {
    expect((await resultRoute.GET(request("other", `/api/sessions/${sessionId}/exam/result`), params({ id: sessionId }))).status).toBe(404);
  });

  it("an exam past its deadline is handed in with no page open, and a scoring a dead process held is resumed once its lease runs out, each check run once", async () => {
    const late = await stack.startSession(users.late.id, EXAM);
    await startClock(stack.db, late); // its learner opened it
    const attempt = await stack.db.examAttempt.findUniqueOrThrow({ where: { sessionId: late } });
    expect(attempt.state).toBe("running");
    const deadline = new Date(Date.now() - 1_000);
    await stack.db.examAttempt.update({ where: { id: attempt.id }, data: { deadline } });
    // A process that claimed it and died: its lease still holds.
    await stack.db
      .$executeRaw`UPDATE "ExamAttempt" SET "state" = 'scoring', "submittedAt" = ${deadline}, "submittedBy" = 'time', "leaseBy" = 'dead', "leaseUntil" = now() + interval '1 hour' WHERE "id" = ${attempt.id}`;
    await stack.db.examCheckResult.create({
      data: {
        attemptId: attempt.id,
        taskId: "greeting",
        checkId: "check",
        phase: "now",
        machine: "node01",
        outcome: "pass",
        output: "by the dead process",
        durationMs: 1,
      },
    });
    await stack.exams.scoreNow(late);
    expect((await stack.db.examAttempt.findUniqueOrThrow({ where: { id: attempt.id } })).state).toBe("scoring");
    await stack.db.examAttempt.update({ where: { id: attempt.id }, data: { leaseUntil: new Date(Date.now() - 1_000) } });
    await stack.exams.scoreNow(late);
    const scored = await stack.db.examAttempt.findUniqueOrThrow({ where: { id: attempt.id }, include: { results: true } });
    expect(scored.state).toBe("scored");
    expect(scored.submittedBy).toBe("time");
    expect(scored.submittedAt!.getTime()).toBe(deadline.getTime());
    // One row per task and check: the dead process's result kept, the rest run once.
    expect(scored.results.map((r) => `${r.taskId}/${r.checkId}`).sort()).toEqual([
      "greeting/check",
      "hostname/check",
      "permissions/exists",
      "permissions/mode",
    ]);
    expect(scored.results.find((r) => r.taskId === "greeting")!.output).toBe("by the dead process");
  }, 120_000);

  it("the tick hands in by deadline: a running exam past it is scoring (or scored) with input closed", async () => {
    const other = await stack.startSession(users.other.id, EXAM);
    await startClock(stack.db, other);
    await stack.db.examAttempt.update({ where: { sessionId: other }, data: { deadline: new Date(Date.now() - 1) } });
    await stack.exams.tick();
    const attempt = await stack.db.examAttempt.findUniqueOrThrow({ where: { sessionId: other } });
    expect(["scoring", "scored"]).toContain(attempt.state);
    expect(attempt.submittedBy).toBe("time");
    expect((await stack.db.labSession.findUniqueOrThrow({ where: { id: other } })).inputClosedAt).not.toBeNull();
  }, 120_000);
});

describe("a cohort's exam", () => {
  it("opens at the cohort's start, closes at its end, and gives as many sittings as the cohort says", async () => {
    const start = () => labSessionRoute.POST(request("cohorted", `/api/labs/${EXAM}/session`, { method: "POST" }), params({ slug: EXAM }));
    const hour = 60 * 60_000;
    const cohort = await stack.db.cohort.create({
      data: { name: "exam day", labs: [EXAM], startsAt: new Date(Date.now() + hour), examAttempts: 1, examMinutes: 20 },
    });
    await stack.db.cohortMember.create({ data: { cohortId: cohort.id, userId: users.cohorted.id, role: "learner" } });
    const early = await start();
    expect([early.status, ((await early.json()) as { code: string }).code]).toEqual([409, "examNotOpen"]);
    await stack.db.cohort.update({
      where: { id: cohort.id },
      data: { startsAt: new Date(Date.now() - hour), endsAt: new Date(Date.now() - 1_000) },
    });
    expect(((await (await start()).json()) as { code: string }).code).toBe("examClosed");
    await stack.db.cohort.update({ where: { id: cohort.id }, data: { endsAt: new Date(Date.now() + hour) } });
    const first = await start();
    expect(first.status).toBe(200);
    const sitting = ((await first.json()) as { sessionId: string }).sessionId;
    expect((await stack.db.labSession.findUniqueOrThrow({ where: { id: sitting } })).cohortId).toBe(cohort.id);
    // The cohort's exam time, not the exam's own 15 minutes.
    expect((await stack.db.examAttempt.findUniqueOrThrow({ where: { sessionId: sitting } })).durationMinutes).toBe(20);
    // The live sitting is joined, not refused.
    expect(((await (await start()).json()) as { sessionId: string }).sessionId).toBe(sitting);
    await stack.db.labSession.update({ where: { id: sitting }, data: { state: "ended", endedAt: new Date() } }); // the sitting is over
    expect(((await (await start()).json()) as { code: string }).code).toBe("examAttemptsUsed");
    await stack.db.cohort.update({ where: { id: cohort.id }, data: { examAttempts: 2 } });
    const second = await start();
    expect(second.status).toBe(200);
    const secondId = ((await second.json()) as { sessionId: string }).sessionId;
    expect(secondId).not.toBe(sitting);

    // Its instructors' table and CSV: the latest sitting, scored.
    await examRoute.GET(request("cohorted", `/api/sessions/${secondId}/exam`), params({ id: secondId })); // opened: the clock runs
    await submitExam(stack.db, secondId);
    await stack.exams.scoreNow(secondId);
    const results = (id: keyof typeof cookies, format = "") =>
      cohortResultsRoute.GET(
        request(id, `/api/cohorts/${cohort.id}/exams/${EXAM}/results${format}`),
        params({ id: cohort.id, slug: EXAM }),
      );
    expect((await results("anonymous")).status).toBe(401);
    expect((await results("cohorted")).status).toBe(403);
    const table = (await (await results("admin")).json()) as {
      tasks: { id: string }[];
      rows: { email: string; state: string; sessionId: string; score: number }[];
    };
    expect(table.tasks.map((t) => t.id)).toEqual(["greeting", "hostname", "permissions"]);
    expect(table.rows.map((r) => [r.email, r.state, r.sessionId])).toEqual([["cohorted@example.test", "scored", secondId]]);
    const csv = await results("admin", "?format=csv");
    expect(csv.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    const bytes = Buffer.from(await csv.arrayBuffer());
    expect([...bytes.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]); // the BOM Excel needs (fetch's text() would drop it)
    const [header, row] = bytes.subarray(3).toString("utf8").split("\r\n");
    expect(header).toContain("氏名,メールアドレス,状態,得点");
    expect(header).toContain("node01 にあいさつのファイルを作る(点)");
    expect(row).toContain("cohorted@example.test,scored,");
  }, 120_000);
});
