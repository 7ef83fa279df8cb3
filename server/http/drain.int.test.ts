/**
 * Graceful drain of a real server process (server.ts in production mode; run `next build` first)
 * on SIGTERM, over real sshd hosts (netns) and embedded PostgreSQL: a check running when the
 * signal comes finishes and is recorded, the terminal socket is closed with CloseCode.restarting,
 * and the process exits 0. Takes /tmp/labdeck-test.lock (netns hosts).
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { writeStaticHostsFile } from "../testing/netns-hosts";
import { freePort, startTestStack, type TestStack } from "../testing/stack";
import { CloseCode, TERMINAL_WS_PATH } from "../terminal/protocol";

/** How long the lab's check takes, s: long enough to send SIGTERM while it runs. */
const CHECK_SECONDS = 3;
const SECRET = "drain-test-secret-".padEnd(48, "x");
let stack: TestStack;
let dir: string;
let server: ChildProcess | null = null;

function writeLab(labsDir: string) {
  const put = (file: string, content: string, mode = 0o644) => {
    const full = path.join(labsDir, "slow-check", file);
    fs.mkdirSync(path.dirname(full), { recursive: true });
    fs.writeFileSync(full, content, { mode });
  };
  put(
    "lab.yaml",
    [
      "title: drain",
      "summary: a slow check",
      "durationMinutes: 5",
      "steps:",
      "  - { id: slow, title: slow, machine: node01, timeoutSeconds: 20 }",
    ].join("\n"),
  );
  put("lesson.md", "# drain\n");
  put("steps/slow/step.md", "slow\n");
  put("steps/slow/hint.md", "slow\n");
  put("steps/slow/check.sh", `#!/bin/bash\nsleep ${CHECK_SECONDS}\necho finished after the signal\nexit 1\n`, 0o755);
  put("steps/slow/solution.sh", "#!/bin/bash\ntrue\n", 0o755);
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "labdeck-drain-"));
  fs.chmodSync(dir, 0o711);
  writeLab(path.join(dir, "labs"));
  stack = await startTestStack({ subnet: 91, labsDir: path.join(dir, "labs"), secret: Buffer.from(SECRET, "utf8") });
}, 120_000);

afterAll(async () => {
  if (server && server.exitCode === null) server.kill("SIGKILL");
  await stack?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("SIGTERM drains a real server process", () => {
  it("lets the running check finish and be recorded, closes terminal sockets with 4503, exits 0", async () => {
    const sessionId = await stack.startSession("drain-learner", "slow-check");
    const hostsFile = path.join(dir, "hosts.json");
    await writeStaticHostsFile(stack.hosts, hostsFile, "shared");
    const port = await freePort();
    const proc = (server = spawn(process.execPath, ["--import", "tsx", "server.ts"], {
      env: {
        ...process.env,
        NODE_ENV: "production",
        PORT: String(port),
        HOST: "127.0.0.1",
        DATABASE_URL: stack.databaseUrl,
        LABDECK_SECRET: SECRET,
        LABDECK_DATA_DIR: path.join(dir, "data"),
        LABDECK_HOSTS_FILE: hostsFile,
        LABDECK_MACHINES: "netns-demo",
        LABDECK_LABS_DIR: path.join(dir, "labs"),
        LABDECK_GRADER_INTERVAL_MS: "500",
        LABDECK_DRAIN_TIMEOUT_MS: "15000",
      },
      stdio: ["ignore", "pipe", "pipe"],
    }));
    let output = "";
    proc.stdout!.on("data", (c: Buffer) => (output += c.toString()));
    proc.stderr!.on("data", (c: Buffer) => (output += c.toString()));
    const exited = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)));
    await expect.poll(() => output.includes("LABDECK_READY") || proc.exitCode !== null, { timeout: 90_000, interval: 100 }).toBe(true);
    expect(output, output).toContain("LABDECK_READY");

    // Wait until the server's grader is in the middle of a check (its claim is held; its first claim
    // waits a few seconds after the start), then open a socket and signal.
    const inFlight = async () => {
      const s = await stack.db.labSession.findUniqueOrThrow({ where: { id: sessionId } });
      return s.checkUntil !== null && s.checkUntil.getTime() > Date.now();
    };
    await expect.poll(inFlight, { timeout: 90_000 }).toBe(true);
    // A terminal socket (the close code comes to every open socket, before or after hello; opened
    // now, as one that never says hello is closed after 5 s).
    const ws = new WebSocket(`ws://127.0.0.1:${port}${TERMINAL_WS_PATH}`, { headers: { origin: `http://127.0.0.1:${port}` } });
    const runs = async () => (await stack.db.checkRun.aggregate({ where: { sessionId }, _sum: { count: true } }))._sum.count ?? 0;
    // What the check's record count was when the socket closed: the close comes first in the drain.
    const closed = new Promise<{ code: number; runs: Promise<number> }>((resolve) =>
      ws.once("close", (code) => resolve({ code, runs: runs() })),
    );
    await new Promise((resolve, reject) => (ws.once("open", resolve), ws.once("error", reject)));

    const before = await runs();
    // The database's clock, as the run's record is stamped by it.
    const [clock] = await stack.db.$queryRaw<{ now: Date }[]>`SELECT now() AT TIME ZONE 'UTC' AS now`;
    const signalledAt = clock!.now;
    proc.kill("SIGTERM");

    const close = await closed;
    expect(close.code).toBe(CloseCode.restarting);
    // Closed while the running check (CHECK_SECONDS long) still ran: it was recorded after.
    expect(await close.runs).toBe(before);
    expect(await exited, output).toBe(0);
    // The check that was running finished after the signal and was recorded, and its claim released.
    expect(await runs()).toBe(before + 1);
    const newest = await stack.db.checkRun.findFirstOrThrow({ where: { sessionId }, orderBy: { lastAt: "desc" } });
    expect(newest.output).toContain("finished after the signal");
    expect(newest.lastAt.getTime()).toBeGreaterThan(signalledAt.getTime());
    const after = await stack.db.labSession.findUniqueOrThrow({ where: { id: sessionId } });
    expect(after.checkUntil).toBeNull();
    expect(output).toMatch(/"msg":"drained"/);
  }, 180_000);
});
