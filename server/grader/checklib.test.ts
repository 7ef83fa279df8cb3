/**
 * The boot-time helpers of checklib.sh, run by real bash the way checks run (clean environment)
 * against a fake root laid over /etc and /usr in a private mount namespace
 * (server/testing/fake-root.ts), so nothing on this machine is read or changed.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runInFakeRoot } from "../testing/fake-root";
import { CHECK_LIB } from "./grader";

let root: string;
/** Directories the helpers read every file of: only the fake's files count, never this machine's. */
const READ_DIRS = ["sysctl.d", "modules-load.d"].flatMap((d) => ["/etc", "/run", "/usr/local/lib", "/usr/lib", "/lib"].map((p) => `${p}/${d}`));

function put(file: string, content: string) {
  const full = path.join(root, file);
  fs.mkdirSync(path.dirname(full), { recursive: true });
  fs.writeFileSync(full, content);
}

async function sh(script: string): Promise<string> {
  const run = await runInFakeRoot(`${CHECK_LIB}\n${script}`, { root, exact: READ_DIRS });
  if (run.code !== 0) throw new Error(`exit ${run.code}: ${run.stderr}`);
  return run.stdout.trim();
}

beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "checklib-"));
  // The course's trap: k8s.conf sets ip_forward=1, a later zz- file sets it back to 0.
  put("etc/sysctl.d/k8s.conf", "net.bridge.bridge-nf-call-iptables = 1\nnet.ipv4.ip_forward = 1\n");
  put("etc/sysctl.d/zz-monitoring.conf", "# old agent\nnet/ipv4/ip_forward=0\n");
  put("usr/lib/sysctl.d/50-default.conf", "kernel.pid_max = 4194304\n-net.ipv4.ping_group_range = 0 2147483647\n");
  // Same file name in /usr/lib is masked by /etc.
  put("usr/lib/sysctl.d/k8s.conf", "net.ipv4.ip_forward = 7\n");
  put("etc/fstab", "UUID=abc / ext4 defaults 0 1\n/swapfile none swap sw 0 0\n#/old.swap none swap sw 0 0\n/other none swap noauto 0 0\n");
  put("etc/modules-load.d/k8s.conf", "overlay\n# comment\nbr_netfilter\n");
  put("etc/modules", "loop\n");
});

afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

describe("checklib.sh boot-time helpers", () => {
  it("applies sysctl.d files in systemd's order: the zz- file wins over k8s.conf", async () => {
    expect(await sh("boot_sysctl net.ipv4.ip_forward")).toBe("0");
    expect(await sh("boot_sysctl_source net.ipv4.ip_forward")).toBe("/etc/sysctl.d/zz-monitoring.conf");
    expect(await sh("boot_sysctl net.bridge.bridge-nf-call-iptables")).toBe("1");
    expect(await sh("boot_sysctl net.ipv4.ping_group_range")).toBe("0 2147483647");
    expect(await sh("boot_sysctl kernel.nonexistent")).toBe("");
  });

  it("sees the fix once the override is gone", async () => {
    fs.rmSync(path.join(root, "etc/sysctl.d/zz-monitoring.conf"));
    expect(await sh("boot_sysctl net.ipv4.ip_forward")).toBe("1");
    put("etc/sysctl.d/zz-monitoring.conf", "net/ipv4/ip_forward=0\n");
  });

  it("lists only fstab swap entries that activate at boot", async () => {
    expect(await sh("boot_swap")).toBe("/swapfile none swap sw 0 0");
  });

  it("lists modules loaded at boot from modules-load.d and /etc/modules", async () => {
    expect((await sh("boot_modules")).split("\n")).toEqual(["br_netfilter", "loop", "overlay"]);
    expect(await sh("boot_module overlay && echo yes || echo no")).toBe("yes");
    expect(await sh("boot_module nf_conntrack && echo yes || echo no")).toBe("no");
  });
});
