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
describe("apt_get", () => {
  it("waits for the lists lock of `apt-get update`, says so, then succeeds once it is free", async () => {
    await fs.mkdir(path.join(dir, "lists", "partial"), { recursive: true });
    await fs.mkdir(path.join(dir, "sources.list.d"));
    await fs.writeFile(path.join(dir, "sources.list"), "");
    // Holds the lock until its stdin closes: the test decides when apt may have it.
    const holder = spawn(
      "python3",
      [
        "-c",
        `import fcntl,os,sys\nfd=os.open(sys.argv[1],os.O_RDWR|os.O_CREAT)\nfcntl.lockf(fd,fcntl.LOCK_EX)\nprint("held",flush=True)\nsys.stdin.read()`,
        path.join(dir, "lists", "lock"),
      ],
      { stdio: ["pipe", "pipe", "inherit"] },
    );
    try {
      await new Promise((r) => holder.stdout.once("data", r));
      const options = [
        `Dir::State::Lists=${dir}/lists`,
        `Dir::Etc::SourceList=${dir}/sources.list`,
        `Dir::Etc::SourceParts=${dir}/sources.list.d`,
      ];
      const script = `source scripts/lib/apt.sh; apt_get ${options.map((o) => `-o ${o}`).join(" ")} update -qq`;
      const child = spawn("bash", ["-c", script], { cwd: root });
      let out = "";
      child.stdout.on("data", (b: Buffer) => (out += b));
      child.stderr.on("data", (b: Buffer) => (out += b));
      const result = new Promise<number | null>((resolve) => child.on("close", resolve));
      const waiting = /==> waiting for another package manager to finish \(held by process \d+ \(python3\)\)/;
      await expect.poll(() => out, { timeout: 30_000 }).toMatch(waiting);
      // While the lock is held, apt_get waits: it has not ended.
      expect(child.exitCode).toBeNull();
      const released = new Promise((r) => holder.once("exit", r));
      holder.stdin.end();
      await released;
      expect(await result, out).toBe(0);
    } finally {
      holder.kill();
    }
  }, 60_000);
});
