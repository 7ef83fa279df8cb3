/**
 * Two server processes on one real PostgreSQL behind Debian's nginx (e2e/replicas/serve.ts),
 * real sshd hosts: a learner works in the lab page in Chromium through nginx while an instructor
 * watches the cohort dashboard; the process serving them is killed -9. The page reconnects
 * through nginx to the other process, the grader there keeps unlocking steps, the dashboard keeps
 * updating, no check ran twice at once for a session, and no session is left starting or ending.
 * The shell is the same one (it lives in the machine's terminal holder): a variable set before
 * the kill is still set after it. Before that, a sign-out through the process that does not hold
 * the learner's terminal socket closes it on the one that does (the access notice over PostgreSQL).
 */
import { spawn, type ChildProcess } from "node:child_process";
import pg from "pg";
import { expect, test, type Browser, type BrowserContext } from "@playwright/test";
import { DashboardPage } from "./pom/DashboardPage";
import { LabPage } from "./pom/LabPage";

interface Replicas {
  publicUrl: string;
  databaseUrl: string;
  servers: { pid: number; port: number; metrics: string }[];
  cohortId: string;
  learner: { email: string; password: string };
  instructor: { email: string; password: string };
}

let serve: ChildProcess;
let info: Replicas;

test.describe.configure({ mode: "serial", timeout: 240_000 });

test.beforeAll(async () => {
  test.setTimeout(240_000);
  // Node itself (not npx): the SIGTERM of afterAll must reach the script, which tears everything down.
  serve = spawn(process.execPath, ["--import", "tsx", "e2e/replicas/serve.ts"], { stdio: ["ignore", "pipe", "inherit"] });
  info = await new Promise<Replicas>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error("replicas did not start within 180 s")), 180_000);
    serve.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
      const line = out.split("\n").find((l) => l.startsWith("REPLICAS "));
      if (line) {
        clearTimeout(timer);
        resolve(JSON.parse(line.slice("REPLICAS ".length)) as Replicas);
      }
    });
    serve.once("exit", (code) => reject(new Error(`replicas serve exited with ${code}`)));
  });
});

test.afterAll(async () => {
  if (serve && serve.exitCode === null) {
    serve.kill("SIGTERM");
    await new Promise((r) => serve.once("exit", r));
  }
});

async function signedIn(browser: Browser, login: { email: string; password: string }): Promise<BrowserContext> {
  const context = await browser.newContext({ baseURL: info.publicUrl, viewport: { width: 1400, height: 900 } });
  const res = await context.request.post("/api/auth/sign-in/email", { data: login, headers: { origin: info.publicUrl } });
  expect(res.ok(), `sign-in of ${login.email}: HTTP ${res.status()}`).toBe(true);
  return context;
}

/** The lab's machines (labs/hello-terminal/lab.yaml): one terminal socket each on the lab page. */
const MACHINES = ["controlplane", "node01", "node02"] as const;

/** The learner's write sockets a server process holds (its metrics count them); 0 when it does not answer. */
async function writeSockets(server: Replicas["servers"][number]): Promise<number> {
  const text = await fetch(server.metrics).then(
    (r) => r.text(),
    () => "",
  );
  const m = /labdeck_terminal_sockets\{mode="write"\} (\d+)/.exec(text);
  return m ? Number(m[1]) : 0;
}

/** A server process holding one of the learner's terminal sockets. */
async function serverWithWriter(): Promise<Replicas["servers"][number] | undefined> {
  for (const server of info.servers) if ((await writeSockets(server)) > 0) return server;
  return undefined;
}

test("signing out through one process closes the terminal socket the other process holds", async ({ browser }) => {
  // Runs before the kill test, on its own sign-in: the learner's other sign-ins are not touched.
  const learnerContext = await signedIn(browser, info.learner);
  const lab = new LabPage(await learnerContext.newPage());
  await lab.goto("hello-terminal");
  await lab.open("node01");
  await expect.poll(serverWithWriter, { timeout: 10_000 }).toBeDefined();
  const holder = (await serverWithWriter())!;
  const other = info.servers.find((s) => s !== holder)!;

  // Straight to the process that does not hold the socket (not through nginx): only the access
  // notice over PostgreSQL can tell the holder.
  const res = await learnerContext.request.post(`http://127.0.0.1:${other.port}/api/auth/sign-out`, {
    data: {},
    headers: { origin: info.publicUrl },
  });
  expect(res.ok(), `sign-out through the other process: HTTP ${res.status()}`).toBe(true);
  const signedOutAt = Date.now();
  await expect(lab.terminal("node01")).toHaveAttribute("data-status", "failed", { timeout: 10_000 });
  await expect(lab.terminal("node01")).toContainText("サインアウトしたため");
  console.log(`replicas: socket on the other process closed ${Date.now() - signedOutAt} ms after sign-out`);
  await expect.poll(serverWithWriter, { timeout: 10_000 }).toBeUndefined();
  await learnerContext.close();
});

test("kill -9 of the process serving a learner: the page and the dashboard carry on through the other", async ({ browser }) => {
  const learnerContext = await signedIn(browser, info.learner);
  const instructorContext = await signedIn(browser, info.instructor);
  const lab = new LabPage(await learnerContext.newPage());
  const dashboard = new DashboardPage(await instructorContext.newPage());

  await lab.goto("hello-terminal");
  await lab.expectStepState("hello-file", "current");
  // nginx spreads sockets over both processes (least_conn): a mark in every machine's shell, so
  // whichever of them the killed process served can be checked after the kill.
  for (const machine of MACHINES) {
    await lab.open(machine);
    await lab.run(`export LABDECK_E2E_MARK=before-kill-${machine}`);
  }
  await dashboard.goto(info.cohortId);
  await dashboard.expectProgress(info.learner.email, 0, "hello-file", 20_000);

  await expect.poll(serverWithWriter, { timeout: 10_000 }).toBeDefined();
  const victim = (await serverWithWriter())!;
  const survivor = info.servers.find((s) => s !== victim)!;
  process.kill(victim.pid, "SIGKILL");
  const killedAt = Date.now();

  // The terminals the victim served notice, reconnect through nginx to the other process, and are
  // live again: every writer socket is on the survivor.
  await expect.poll(() => writeSockets(survivor), { timeout: 30_000 }).toBe(MACHINES.length);
  await lab.expectTerminalsConnected(MACHINES, 30_000);
  console.log(`replicas: every terminal live on the survivor ${Date.now() - killedAt} ms after kill -9`);

  // The same shells, through the other process.
  for (const machine of MACHINES) {
    await lab.open(machine);
    await lab.run('echo "mark=$LABDECK_E2E_MARK"');
    await lab.expectLine(machine, new RegExp(`^mark=before-kill-${machine}$`));
  }
  await lab.open("node01");

  // The grader on the surviving process unlocks the step; the page and the dashboard see it.
  await lab.run("echo こんにちは > /root/hello.txt");
  await lab.expectStepState("hello-file", "done", 20_000);
  await dashboard.expectProgress(info.learner.email, 1, "node02-hostname", 20_000);
  await lab.runInMachine("node02", "node02-hostname");
  await expect(lab.complete()).toBeVisible({ timeout: 20_000 });
  await expect(dashboard.row(info.learner.email)).toHaveAttribute("data-steps-done", "2", { timeout: 20_000 });

  // The database: no session left half-way, and no two checks of a session ever overlapped.
  const client = new pg.Client({ connectionString: info.databaseUrl });
  await client.connect();
  try {
    const stuck = await client.query(`SELECT id, state FROM "LabSession" WHERE state IN ('starting', 'ending')`);
    expect(stuck.rows).toEqual([]);
    // History rows count their runs; minGapMs is the smallest time between a run's start and the
    // end of the session's run before it, so a negative one would mean two checks overlapped.
    const runs = await client.query<{ rows: string; runs: string; gap: number | null }>(
      `SELECT count(*) AS rows, sum("count") AS runs, min("minGapMs") AS gap FROM "CheckRun"`,
    );
    const { rows: historyRows, runs: runTotal, gap } = runs.rows[0]!;
    expect(Number(runTotal)).toBeGreaterThan(2);
    // Checks of a session run one at a time over both processes (5 ms of clock slack).
    expect(gap).not.toBeNull();
    expect(gap!).toBeGreaterThanOrEqual(-5);
    console.log(`replicas: ${runTotal} check runs in ${historyRows} history rows, none overlapping (smallest gap ${gap} ms)`);
  } finally {
    await client.end();
  }
  await learnerContext.close();
  await instructorContext.close();
});
