/**
 * Checks run clean: a learner who is root on a machine sets up everything a login
 * environment could carry — PATH, BASH_ENV and a variable in /etc/environment (applied by sshd's
 * PAM), the same in ~/.bashrc and ~/.profile, shims of `swapon` and `systemctl` in /root/bin —
 * and a check run by the platform (SshExecPool.run, what the grader and lab setup use) sees none
 * of it, on real sshd hosts in network namespaces with PAM on. The same machine through the old
 * command line (`bash -s` as the login gives it) IS fooled: the test's traps are real.
 *
 * The hosts share this machine's filesystem: /etc/environment is the test's own file, bound over
 * the real one only inside the host's mount namespace; /root is the host's private tmpfs.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Client } from "ssh2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createNetnsHosts, type NetnsHost, type NetnsHostSet } from "../testing/netns-hosts";
import { SshExecPool } from "../ssh/exec";
import { connectSsh } from "../ssh/connect";
import { CHECK_LIB } from "../labs/check-script";

/** Unused by every other test (grep `subnet:` in server/ and e2e/). */
const SUBNET = 63;

/** What a learner puts in /etc/environment: a PATH with their bin first, a shell hook, a variable. */
const ETC_ENVIRONMENT = [
  'PATH="/root/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"',
  "BASH_ENV=/root/hook.sh",
  "ENV=/root/hook.sh",
  "FOOLED=etc-environment",
  "LABDECK_ROOT=/root/fake",
  "",
].join("\n");

/** The learner's own files on the machine: shims, shell hooks, a fake root for the old hook. */
const LEARNER_SETUP = String.raw`
set -e
mkdir -p /root/bin /root/fake/etc
printf '#!/bin/sh\necho "NAME TYPE SIZE USED PRIO"\necho "/shim.swap file 1G 0B -2"\n' >/root/bin/swapon
printf '#!/bin/sh\necho enabled\n' >/root/bin/systemctl
chmod +x /root/bin/swapon /root/bin/systemctl
printf 'echo hooked-by-BASH_ENV\nexport FOOLED=bash-env\n' >/root/hook.sh
for rc in .bashrc .profile .bash_profile; do
  { echo 'export PATH=/root/bin:$PATH FOOLED=$HOME/'"$rc"' BASH_ENV=/root/hook.sh'; cat "/root/$rc" 2>/dev/null || true; } >"/root/$rc.new"
  mv "/root/$rc.new" "/root/$rc"
done
echo '/fake.swap none swap sw 0 0' >/root/fake/etc/fstab
`;

/** What a script sees of its environment and tools. */
const REPORT = `
echo "PATH=$PATH"
echo "FOOLED=\${FOOLED:-}"
echo "swapon=$(command -v swapon)"
echo "systemctl=$(command -v systemctl)"
echo "vars=$(env | cut -d= -f1 | sort | paste -sd, -)"
echo "shim_swap=$(swapon --show 2>/dev/null | grep -c shim.swap)"
echo "unit=$(systemctl is-enabled labdeck-no-such-unit.service 2>/dev/null | head -1)"
`;
/** What checklib's helpers say (after checklib.sh, which fixes PATH itself). */
const JUDGE = `
echo "lib_swapon=$(command -v swapon)"
echo "boot_swap=$(boot_swap | grep -c fake.swap)"
unit_enabled labdeck-no-such-unit.service && echo "boot_unit=enabled" || echo "boot_unit=not-enabled"
`;
/** A check that reports what it sees, then judges with checklib's helpers and real tools. */
const PROBE = `${CHECK_LIB}\n${REPORT}\n${JUDGE}`;
/** The same report before checklib: what the login environment alone would give a check. */
const TRAPS = `${REPORT}\n${CHECK_LIB}\n${JUDGE}`;

let set: NetnsHostSet;
let host: NetnsHost;
let dir: string;
const pool = new SshExecPool();

/** Runs a script with the command line the platform used before: whatever the login environment gives `bash -s`. */
async function runAsLoginShellWould(script: string): Promise<string> {
  const client: Client = await connectSsh(host);
  try {
    return await new Promise<string>((resolve, reject) => {
      client.exec("timeout 30s bash -s", (error, channel) => {
        if (error) return reject(error);
        let out = "";
        channel.on("data", (d: Buffer) => (out += d.toString("utf8")));
        channel.stderr.on("data", (d: Buffer) => (out += d.toString("utf8")));
        channel.on("close", () => resolve(out));
        channel.end(script);
      });
    });
  } finally {
    client.end();
  }
}

const field = (out: string, name: string) => out.match(new RegExp(`^${name}=(.*)$`, "m"))?.[1];

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "labdeck-clean-env-"));
  const environment = path.join(dir, "environment");
  await writeFile(environment, ETC_ENVIRONMENT);
  set = await createNetnsHosts({
    id: "ce",
    names: ["node01"],
    subnet: SUBNET,
    dir: path.join(dir, "hosts"),
    usePam: true,
    binds: [{ source: environment, target: "/etc/environment" }],
  });
  host = set.hosts[0]!;
  const setup = await pool.run(host, LEARNER_SETUP, 30);
  expect(setup.outcome, setup.output).toBe("pass");
}, 60_000);

afterAll(async () => {
  pool.closeAll();
  await set?.destroy();
  await rm(dir, { recursive: true, force: true });
});

describe("checks run clean (real sshd with PAM, a learner's traps on the machine)", () => {
  it("the traps are real: the login environment's bash -s sees /etc/environment, ~/.bashrc, BASH_ENV and the shims", async () => {
    const out = await runAsLoginShellWould(TRAPS);
    expect(out).toMatch(/hooked-by-BASH_ENV/);
    expect(field(out, "PATH")).toMatch(/^\/root\/bin:/);
    expect(field(out, "FOOLED")).not.toBe("");
    expect(field(out, "swapon")).toBe("/root/bin/swapon");
    expect(field(out, "shim_swap")).toBe("1");
    expect(field(out, "unit")).toBe("enabled");
    // checklib fixes PATH and its unit helpers read unit files, not systemctl's answer: not fooled even here.
    expect(field(out, "lib_swapon")).toMatch(/^\/(usr\/)?sbin\/swapon$/);
    expect(field(out, "boot_unit")).toBe("not-enabled");
  });

  it("a platform check sees only env -i's PATH, HOME and LANG: no /etc/environment, no profile, no BASH_ENV, no shim", async () => {
    const result = await pool.run(host, PROBE, 30);
    expect(result.outcome, result.output).toBe("pass");
    const out = result.output;
    expect(out).not.toMatch(/hooked/);
    // checklib narrows the grader's PATH (ssh/exec.ts SCRIPT_PATH) to the distribution's directories: no /usr/local.
    expect(field(out, "PATH")).toBe("/usr/sbin:/usr/bin:/sbin:/bin");
    expect(field(out, "FOOLED")).toBe("");
    expect(field(out, "swapon")).toMatch(/^\/(usr\/)?sbin\/swapon$/);
    expect(field(out, "systemctl")).toMatch(/^\/(usr\/)?bin\/systemctl$/);
    // bash itself adds PWD, SHLVL and _; nothing else comes in.
    expect(field(out, "vars")).toBe("HOME,LANG,PATH,PWD,SHLVL,_");
    expect(field(out, "shim_swap")).toBe("0");
    expect(field(out, "unit")).not.toBe("enabled");
    expect(field(out, "boot_unit")).toBe("not-enabled");
  });

  it("LABDECK_ROOT set by the learner redirects nothing: checklib reads the machine's own /etc/fstab", async () => {
    const old = await runAsLoginShellWould(`LABDECK_ROOT=/root/fake\nexport LABDECK_ROOT\n${PROBE}`);
    expect(field(old, "boot_swap")).toBe("0"); // the hook is gone from checklib.sh even where the variable is set
    const result = await pool.run(host, `export LABDECK_ROOT=/root/fake\n${PROBE}`, 30);
    expect(field(result.output, "boot_swap")).toBe("0");
    const direct = await pool.run(host, `${CHECK_LIB}\nexport LABDECK_ROOT=/root/fake\nboot_swap | grep -c fake.swap || true`, 30);
    expect(direct.output).toBe("0");
  });
});
