/**
 * scripts/lib/apt.sh waits for a busy package manager instead of failing. Real apt-get with a
 * real held lock: the test holds the lists lock with fcntl (as apt does) in python3 (installed
 * with ansible-core), on a lists directory of its own with an empty source list, so nothing of
 * the machine's apt state is touched and nothing is downloaded.
 */
import { spawn } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-apt-"));
afterAll(() => fs.rm(dir, { recursive: true, force: true }));
const root = path.resolve(import.meta.dirname, "../..");
const HOLD_S = 4;

describe("apt_get", () => {
  it("waits for the lists lock of `apt-get update`, says so, then succeeds", async () => {
    await fs.mkdir(path.join(dir, "lists", "partial"), { recursive: true });
    await fs.mkdir(path.join(dir, "sources.list.d"));
    await fs.writeFile(path.join(dir, "sources.list"), "");
    const holder = spawn(
      "python3",
      [
        "-c",
        `import fcntl,os,sys,time\nfd=os.open(sys.argv[1],os.O_RDWR|os.O_CREAT)\nfcntl.lockf(fd,fcntl.LOCK_EX)\nprint("held",flush=True)\ntime.sleep(${HOLD_S})`,
        path.join(dir, "lists", "lock"),
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    await new Promise((r) => holder.stdout.once("data", r));
    const started = Date.now();
    const options = [
      `Dir::State::Lists=${dir}/lists`,
      `Dir::Etc::SourceList=${dir}/sources.list`,
      `Dir::Etc::SourceParts=${dir}/sources.list.d`,
    ];
    const script = `source scripts/lib/apt.sh; apt_get ${options.map((o) => `-o ${o}`).join(" ")} update -qq`;
    const result = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn("bash", ["-c", script], { cwd: root });
      let out = "";
      child.stdout.on("data", (b: Buffer) => (out += b));
      child.stderr.on("data", (b: Buffer) => (out += b));
      child.on("close", (code) => resolve({ code, out }));
    });
    const seconds = (Date.now() - started) / 1000;
    expect(result.code, result.out).toBe(0);
    expect(result.out).toMatch(/==> waiting for another package manager to finish \(held by process \d+ \(python3\)\)/);
    expect(seconds).toBeGreaterThan(HOLD_S - 1);
    holder.kill();
  }, 60_000);
});
