/**
 * The holder's keeper on a real sshd host (netns): the daemon killed hard (kill -9, not the
 * keeper), a new daemon gives back the same shell (its variable, its $$) with what it wrote
 * meanwhile; killing the keeper and then the daemon still ends the shells (a reboot).
 * Run under the shared lock: flock /tmp/labdeck-test.lock npx vitest run --project integration server/holder/keeper.int.test.ts
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { Client } from "ssh2";
import { afterAll, beforeAll, expect, it } from "vitest";
import { killDaemonAndResume } from "../testing/keeper-scenario";
import { createNetnsHosts, holderDaemonPid, type NetnsHost, type NetnsHostSet } from "../testing/netns-hosts";
import { connectSsh } from "../ssh/connect";
import { connectHolder, HolderTerminal } from "./client";

const SUBNET = 131; // 10.213.131.0/24: unused by every other test (grep `subnet:` and `SUBNET =`)

let dir: string;
let set: NetnsHostSet;
let host: NetnsHost;
let ssh: Client;

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-keeper-"));
  set = await createNetnsHosts({ id: "kp", names: ["node01"], subnet: SUBNET, dir: path.join(dir, "hosts") });
  host = set.hosts[0]!;
  ssh = await connectSsh({
    name: host.name,
    host: host.host,
    port: host.port,
    user: host.user,
    privateKey: host.privateKey,
    hostKey: host.hostKey,
  });
}, 60_000);

afterAll(async () => {
  ssh?.end();
  await set?.destroy();
  await fs.rm(dir, { recursive: true, force: true });
});

it("gives back the same shell after the daemon is killed hard, with the output written meanwhile", async () => {
  const keeper = host.keeperPid!;
  const result = await killDaemonAndResume(ssh, "keep1");
  console.log(`netns: kill -9 of the holder daemon -> the same shell answers: ${Math.round(result.msToSameShell)} ms`);
  expect(result.before.pid).toBe(host.holderPid);
  expect(result.after.pid).not.toBe(result.before.pid);
  expect(result.after.pid).toBe(await holderDaemonPid(keeper)); // the same keeper started it
  expect(result.shellParent).toBe("labdeck-keeper"); // its subreaper, not init
}, 120_000);

it("still ends the shells when the keeper is killed first and then the daemon", async () => {
  const link = await connectHolder(ssh);
  let text = "";
  const term = new HolderTerminal("keep2", { onOutput: (_, d) => (text += d.toString()) });
  await term.attach(link);
  term.write("echo shell-$$\r");
  await expect.poll(() => /shell-(\d+)\r\n/.exec(text)?.[1], { timeout: 20_000 }).toBeDefined();
  const shellPid = /shell-(\d+)\r\n/.exec(text)![1]!;
  process.kill(host.keeperPid!, "SIGKILL");
  process.kill(link.hello!.pid, "SIGKILL");
  await expect
    .poll(
      () =>
        fs.access(`/proc/${shellPid}`).then(
          () => true,
          () => false,
        ),
      { timeout: 10_000 },
    )
    .toBe(false);
  link.close();
}, 60_000);
