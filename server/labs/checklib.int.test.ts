/**
 * The helpers of checklib.sh, run by real bash the way checks run (clean environment) against a
 * fake root laid over /etc, /run, /usr and /var in a private mount namespace
 * (server/testing/fake-root.ts), so nothing on this machine is read or changed. Each test builds
 * its own root: the machine state a learner leaves, then what the helpers say about "now" and
 * "after the next boot". The runtime-only states (/run/modules-load.d, /run/sysctl.d, enable
 * --runtime, mask --runtime) must never count for the boot.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runInFakeRoot } from "../testing/fake-root";
import { CHECK_LIB } from "./check-script";

const UNIT_DIRS = [
  "/etc/systemd/system.control",
  "/etc/systemd/system",
  "/etc/systemd/system.attached",
  "/usr/local/lib/systemd/system",
  "/usr/lib/systemd/system",
  "/lib/systemd/system",
  "/run/systemd/system.control",
  "/run/systemd/transient",
  "/run/systemd/system",
  "/run/systemd/system.attached",
];
/** Directories the helpers read every file of: only the fake's files count, never this machine's. */
const READ_DIRS = [
  ...["sysctl.d", "modules-load.d"].flatMap((d) => ["/etc", "/run", "/usr/local/lib", "/usr/lib", "/lib"].map((p) => `${p}/${d}`)),
  ...UNIT_DIRS,
  "/etc/cron.d",
  "/var/spool/cron/crontabs",
  ...["S", "2", "3", "4", "5"].map((r) => `/etc/rc${r}.d`),
];

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) fs.rmSync(r, { recursive: true, force: true });
});

/** A machine's files: path -> content, or `{ link }` for a symlink, `{ mode }` for an executable. */
type Entry = string | { link: string } | { content: string; mode: number };

/** The systemd units every boot has (vendor directory), as on Debian: default.target -> graphical. */
const BASE: Record<string, Entry> = {
  "usr/lib/systemd/system/sysinit.target": "[Unit]\nWants=local-fs.target swap.target\n",
  "usr/lib/systemd/system/swap.target": "[Unit]\nDescription=Swaps\n",
  "usr/lib/systemd/system/local-fs.target": "[Unit]\n",
  "usr/lib/systemd/system/basic.target": "[Unit]\n",
  "usr/lib/systemd/system/sockets.target": "[Unit]\n",
  "usr/lib/systemd/system/multi-user.target": "[Unit]\nRequires=basic.target\n",
  "usr/lib/systemd/system/graphical.target": "[Unit]\nRequires=multi-user.target\n",
  "usr/lib/systemd/system/default.target": { link: "graphical.target" },
  "usr/lib/systemd/system/rescue.target": "[Unit]\n",
  "etc/fstab": "UUID=abc / ext4 defaults 0 1\n",
};

const AGENT =
  "[Unit]\nDescription=agent\n[Service]\nExecStart=/usr/bin/python3 -m http.server 10250\n[Install]\nWantedBy=multi-user.target\n";

function machine(files: Record<string, Entry>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "checklib-"));
  roots.push(root);
  for (const [file, entry] of Object.entries({ ...BASE, ...files })) {
    const full = path.join(root, file);
    fs.mkdirSync(path.dirname(full), { recursive: true });
    if (typeof entry === "string") fs.writeFileSync(full, entry);
    else if ("link" in entry) fs.symlinkSync(entry.link, full);
    else fs.writeFileSync(full, entry.content, { mode: entry.mode });
  }
  return root;
}

async function sh(root: string, script: string): Promise<string> {
  const run = await runInFakeRoot(`${CHECK_LIB}\n${script}`, { root, exact: READ_DIRS });
  if (run.code !== 0) throw new Error(`exit ${run.code}: ${run.stdout}${run.stderr}`);
  return run.stdout.trim();
}

const yesNo = (test: string) => `if ${test}; then echo yes; else echo no; fi`;

describe("sysctl at boot", () => {
  const trap = {
    "etc/sysctl.d/k8s.conf": "net.bridge.bridge-nf-call-iptables = 1\nnet.ipv4.ip_forward = 1\n",
    "etc/sysctl.d/zz-monitoring.conf": "# old agent\nnet/ipv4/ip_forward=0\n",
    "usr/lib/sysctl.d/50-default.conf": "kernel.pid_max = 4194304\n-net.ipv4.ping_group_range = 0 2147483647\n",
    // Same file name in /usr/lib is masked by /etc.
    "usr/lib/sysctl.d/k8s.conf": "net.ipv4.ip_forward = 7\n",
  };

  it("applies sysctl.d files in systemd's order: the zz- file wins over k8s.conf", async () => {
    const root = machine(trap);
    expect(await sh(root, "boot_sysctl net.ipv4.ip_forward")).toBe("0");
    expect(await sh(root, "boot_sysctl_source net.ipv4.ip_forward")).toBe("/etc/sysctl.d/zz-monitoring.conf");
    expect(await sh(root, "boot_sysctl net.bridge.bridge-nf-call-iptables")).toBe("1");
    expect(await sh(root, "boot_sysctl net.ipv4.ping_group_range")).toBe("0 2147483647");
    expect(await sh(root, "boot_sysctl kernel.nonexistent")).toBe("");
  });

  it("a file under /run/sysctl.d (applied now by sysctl --system) is gone at boot", async () => {
    const root = machine({ ...trap, "run/sysctl.d/zzz-k8s.conf": "net.ipv4.ip_forward = 1\n" });
    expect(await sh(root, "boot_sysctl net.ipv4.ip_forward")).toBe("0");
    expect(await sh(root, "run_sysctl_files net.ipv4.ip_forward")).toBe("/run/sysctl.d/zzz-k8s.conf");
    // ...and a /run file never masks an /etc one at boot either.
    const masked = machine({ "etc/sysctl.d/zz-hardening.conf": "net.ipv4.ip_forward = 0\n", "run/sysctl.d/zz-hardening.conf": "" });
    expect(await sh(masked, "boot_sysctl net.ipv4.ip_forward")).toBe("0");
  });

  it("the fixes an administrator uses: a later file, the override commented out, /etc/sysctl.conf through 99-sysctl.conf", async () => {
    const later = machine({ ...trap, "etc/sysctl.d/zzz-k8s.conf": "net.ipv4.ip_forward = 1\r\n" });
    expect(await sh(later, "boot_sysctl net.ipv4.ip_forward")).toBe("1");
    const commented = machine({ ...trap, "etc/sysctl.d/zz-monitoring.conf": "# net/ipv4/ip_forward=0\n" });
    expect(await sh(commented, "boot_sysctl net.ipv4.ip_forward")).toBe("1");
    const devnull = machine({ ...trap, "etc/sysctl.d/zz-monitoring.conf": { link: "/dev/null" } });
    expect(await sh(devnull, "boot_sysctl net.ipv4.ip_forward")).toBe("1");
    const sysctlConf = {
      "etc/sysctl.d/99-sysctl.conf": { link: "../sysctl.conf" },
      "etc/sysctl.conf": "net.ipv4.ip_forward=1\nnet.bridge.bridge-nf-call-iptables=1\n",
    };
    expect(await sh(machine(sysctlConf), "boot_sysctl net.ipv4.ip_forward; boot_sysctl_source net.ipv4.ip_forward")).toBe(
      "1\n/etc/sysctl.d/99-sysctl.conf",
    );
    // Without Debian's symlink systemd-sysctl never reads /etc/sysctl.conf.
    expect(await sh(machine({ "etc/sysctl.conf": "net.ipv4.ip_forward=1\n" }), "boot_sysctl net.ipv4.ip_forward")).toBe("");
  });
});

describe("kernel modules at boot", () => {
  it("reads modules-load.d and /etc/modules (through Debian's modules.conf link)", async () => {
    const root = machine({
      "etc/modules-load.d/k8s.conf": "overlay\n# comment\nbr_netfilter\n",
      "etc/modules-load.d/modules.conf": { link: "../modules" },
      "etc/modules": "loop\n",
    });
    expect((await sh(root, "boot_modules")).split("\n")).toEqual(["br_netfilter", "loop", "overlay"]);
    expect(await sh(root, yesNo("boot_module overlay"))).toBe("yes");
    expect(await sh(root, yesNo("boot_module nf_conntrack"))).toBe("no");
    // /etc/modules alone (its link removed) is read by nothing at boot.
    expect(await sh(machine({ "etc/modules": "overlay\n" }), yesNo("boot_module overlay"))).toBe("no");
  });

  it("a file under /run/modules-load.d (plus modprobe now) is gone at boot", async () => {
    const root = machine({ "run/modules-load.d/k8s.conf": "overlay\nbr_netfilter\n" });
    expect(await sh(root, yesNo("boot_module br_netfilter"))).toBe("no");
    expect(await sh(root, "run_module_files br_netfilter")).toBe("/run/modules-load.d/k8s.conf");
  });

  it("an /etc file of the same name masks a vendor file; CRLF, spaces and dashes are read as systemd-modules-load does, inline comments are not", async () => {
    const masked = machine({ "usr/lib/modules-load.d/k8s.conf": "overlay\n", "etc/modules-load.d/k8s.conf": { link: "/dev/null" } });
    expect(await sh(masked, yesNo("boot_module overlay"))).toBe("no");
    const sloppy = machine({ "etc/modules-load.d/k8s.conf": "  overlay \r\nbr-netfilter\r\n; comment\n" });
    expect(await sh(sloppy, "boot_modules")).toBe("br_netfilter\noverlay");
    // systemd-modules-load has no inline comments: the whole line is taken as one module name.
    const inline = machine({ "etc/modules-load.d/k8s.conf": "overlay # for containerd\nbr_netfilter\n" });
    expect(await sh(inline, "boot_modules")).toBe("br_netfilter");
    expect(await sh(inline, "boot_module_bad_lines")).toBe("/etc/modules-load.d/k8s.conf: overlay # for containerd");
  });
});

describe("systemd units at boot", () => {
  const enabled = {
    "etc/systemd/system/legacy.service": AGENT,
    "etc/systemd/system/multi-user.target.wants/legacy.service": { link: "/etc/systemd/system/legacy.service" },
  };

  it("enabled (a wants link in /etc) starts at boot; disabled does not", async () => {
    expect(await sh(machine(enabled), "boot_unit_state legacy.service")).toBe("starts");
    expect(await sh(machine(enabled), yesNo("unit_enabled legacy"))).toBe("yes"); // a bare name is a service, as for systemctl
    expect(await sh(machine({ "etc/systemd/system/legacy.service": AGENT }), "boot_unit_state legacy.service")).toBe("disabled");
    expect(await sh(machine({}), "boot_unit_state legacy.service")).toBe("not-found");
  });

  it("enabled-runtime (the wants link only under /run) does not start at boot", async () => {
    const root = machine({
      "etc/systemd/system/legacy.service": AGENT,
      "run/systemd/system/multi-user.target.wants/legacy.service": { link: "/etc/systemd/system/legacy.service" },
    });
    expect(await sh(root, yesNo("unit_enabled legacy.service"))).toBe("no");
    expect(await sh(root, "unit_runtime_links legacy.service")).toBe("/run/systemd/system/multi-user.target.wants/legacy.service");
  });

  it("masked-runtime is not disabled for the boot: the mask goes, the /etc wants link stays", async () => {
    const root = machine({ ...enabled, "run/systemd/system/legacy.service": { link: "/dev/null" } });
    expect(await sh(root, "boot_unit_state legacy.service")).toBe("starts");
    expect(await sh(root, "unit_runtime_links legacy.service")).toBe("/run/systemd/system/legacy.service");
  });

  it("a persistent mask wins over wants links; an empty unit file is a mask too", async () => {
    const root = machine({
      "usr/lib/systemd/system/legacy.service": AGENT,
      "etc/systemd/system/multi-user.target.wants/legacy.service": { link: "/usr/lib/systemd/system/legacy.service" },
      "etc/systemd/system/legacy.service": { link: "/dev/null" },
    });
    expect(await sh(root, "boot_unit_state legacy.service")).toBe("masked");
    expect(await sh(machine({ ...enabled, "etc/systemd/system/legacy.service": "" }), "boot_unit_state legacy.service")).toBe("masked");
  });

  it("follows aliases, drop-in Wants=, socket activation and template instances; a deleted unit file leaves a dangling link that starts nothing", async () => {
    const alias = machine({
      "usr/lib/systemd/system/agent.service": AGENT,
      "etc/systemd/system/legacy.service": { link: "/usr/lib/systemd/system/agent.service" },
      "etc/systemd/system/multi-user.target.wants/legacy.service": { link: "/usr/lib/systemd/system/agent.service" },
    });
    expect(await sh(alias, "boot_unit_state agent.service")).toBe("starts");
    const dropIn = machine({
      "etc/systemd/system/legacy.service": AGENT,
      "etc/systemd/system/multi-user.target.d/agent.conf": "[Unit]\nWants=legacy.service\n",
    });
    expect(await sh(dropIn, "boot_unit_state legacy.service")).toBe("starts");
    const socket = machine({
      "etc/systemd/system/legacy.service": AGENT,
      "etc/systemd/system/legacy.socket": "[Socket]\nListenStream=10250\n",
      "etc/systemd/system/sockets.target.wants/legacy.socket": { link: "/etc/systemd/system/legacy.socket" },
    });
    expect(await sh(socket, yesNo("unit_enabled legacy.service"))).toBe("yes");
    const instance = machine({
      "etc/systemd/system/agent@.service": AGENT,
      "etc/systemd/system/multi-user.target.wants/agent@10250.service": { link: "/etc/systemd/system/agent@.service" },
    });
    expect(await sh(instance, "boot_unit_state agent@10250.service")).toBe("starts");
    const deleted = machine({
      "etc/systemd/system/multi-user.target.wants/legacy.service": { link: "/etc/systemd/system/legacy.service" },
    });
    expect(await sh(deleted, "boot_unit_state legacy.service")).toBe("not-found");
    // Wanted only by a target no boot reaches.
    const stray = machine({
      "etc/systemd/system/legacy.service": AGENT,
      "etc/systemd/system/rescue.target.wants/legacy.service": { link: "/etc/systemd/system/legacy.service" },
    });
    expect(await sh(stray, "boot_unit_state legacy.service")).toBe("disabled");
  });
});

describe("unit settings at boot", () => {
  it("drop-ins in /etc override the unit's ExecStart (an empty one clears it); a /run drop-in is gone at boot", async () => {
    const root = machine({
      "etc/systemd/system/legacy.service": AGENT,
      "etc/systemd/system/legacy.service.d/port.conf": "[Service]\nExecStart=\nExecStart=/usr/bin/python3 -m http.server 10251\n",
      "run/systemd/system/legacy.service.d/zz-back.conf": "[Service]\nExecStart=\nExecStart=/usr/bin/python3 -m http.server 10250\n",
    });
    expect(await sh(root, "boot_unit_setting legacy.service ExecStart")).toBe("/usr/bin/python3 -m http.server 10251");
    expect(await sh(machine({ "etc/systemd/system/legacy.service": AGENT }), "boot_unit_setting legacy.service ExecStart")).toBe(
      "/usr/bin/python3 -m http.server 10250",
    );
  });
});

describe("swap at boot", () => {
  const fstab = {
    "etc/fstab":
      "UUID=abc / ext4 defaults 0 1\n/swapfile none swap sw,pri=42 0 0\n#/old.swap none swap sw 0 0\n/other none swap noauto 0 0\n",
  };

  it("an fstab line (not commented, not noauto) turns swap on at boot", async () => {
    expect(await sh(machine(fstab), "boot_swap")).toBe("/swapfile\t/etc/fstab");
    expect(await sh(machine({}), "boot_swap")).toBe("");
  });

  it("masking swap.target (kubespray's way) or the line's unit stops it, the fstab line may stay; a runtime mask does not", async () => {
    expect(await sh(machine({ ...fstab, "etc/systemd/system/swap.target": { link: "/dev/null" } }), "boot_swap")).toBe("");
    expect(await sh(machine({ ...fstab, "etc/systemd/system/swapfile.swap": { link: "/dev/null" } }), "boot_swap")).toBe("");
    expect(await sh(machine({ ...fstab, "run/systemd/system/swap.target": { link: "/dev/null" } }), "boot_swap")).toBe(
      "/swapfile\t/etc/fstab",
    );
    expect(await sh(machine({ ...fstab, "run/systemd/system/swapfile.swap": { link: "/dev/null" } }), "boot_swap")).toBe(
      "/swapfile\t/etc/fstab",
    );
    // UUID= lines are named after their by-uuid link.
    const byUuid = machine({
      "etc/fstab": "UUID=0a1b-2c none swap sw 0 0\n",
      "etc/systemd/system/dev-disk-by\\x2duuid-0a1b\\x2d2c.swap": { link: "/dev/null" },
    });
    expect(await sh(byUuid, "boot_swap")).toBe("");
  });

  it("a .swap unit file counts when enabled (persistently) and swap.target is not masked", async () => {
    const unit = { "etc/systemd/system/swap2.swap": "[Swap]\nWhat=/swap2\n[Install]\nWantedBy=swap.target\n" };
    const link = { "etc/systemd/system/swap.target.wants/swap2.swap": { link: "/etc/systemd/system/swap2.swap" } };
    expect(await sh(machine({ ...unit, ...link }), "boot_swap")).toBe("/swap2\t/etc/systemd/system/swap2.swap");
    expect(await sh(machine(unit), "boot_swap")).toBe("");
    expect(
      await sh(
        machine({ ...unit, "run/systemd/system/swap.target.wants/swap2.swap": { link: "/etc/systemd/system/swap2.swap" } }),
        "boot_swap",
      ),
    ).toBe("");
    expect(await sh(machine({ ...unit, ...link, "etc/systemd/system/swap.target": { link: "/dev/null" } }), "boot_swap")).toBe("");
  });

  it("swap turned on by something other than fstab: a service, a script it runs, rc.local, cron @reboot", async () => {
    const service = {
      "etc/systemd/system/myswap.service":
        "[Service]\nType=oneshot\nExecStart=/sbin/swapon /swapfile\n[Install]\nWantedBy=multi-user.target\n",
      "etc/systemd/system/multi-user.target.wants/myswap.service": { link: "/etc/systemd/system/myswap.service" },
    };
    expect(await sh(machine(service), "boot_swap")).toBe("swapon\tmyswap.service (/etc/systemd/system/myswap.service)");
    expect(await sh(machine({ "etc/systemd/system/myswap.service": service["etc/systemd/system/myswap.service"] }), "boot_swap")).toBe("");
    const script = machine({
      "usr/local/sbin/more-swap": { content: "#!/bin/sh\n# swapon is needed here\nswapon -p 5 /swapfile\n", mode: 0o755 },
      "etc/systemd/system/more-swap.service": "[Service]\nExecStart=/usr/local/sbin/more-swap\n",
      "etc/systemd/system/multi-user.target.wants/more-swap.service": { link: "/etc/systemd/system/more-swap.service" },
    });
    expect(await sh(script, "boot_swap")).toBe("swapon\tmore-swap.service (/etc/systemd/system/more-swap.service -> /usr/local/sbin/more-swap)");
    // Any path, a few levels deep: a unit's script in /usr/bin that runs another that calls swapon.
    const chain = (levels: number) => {
      const files: Record<string, Entry> = {
        "etc/systemd/system/keeper.service": "[Service]\nType=oneshot\nExecStart=/usr/bin/keeper --quiet\n",
        "etc/systemd/system/multi-user.target.wants/keeper.service": { link: "/etc/systemd/system/keeper.service" },
      };
      for (let i = 0; i < levels; i++) {
        const self = i === 0 ? "usr/bin/keeper" : `usr/lib/keeper/step${i}`;
        const body = i === levels - 1 ? "/sbin/swapon -p 7 /swapfile" : `exec /usr/lib/keeper/step${i + 1}`;
        files[self] = { content: `#!/bin/sh\n${body}\n`, mode: 0o755 };
      }
      return machine(files);
    };
    expect(await sh(chain(2), "boot_swap")).toBe("swapon\tkeeper.service (/etc/systemd/system/keeper.service -> /usr/lib/keeper/step1)");
    expect(await sh(chain(4), "boot_swap")).toBe("swapon\tkeeper.service (/etc/systemd/system/keeper.service -> /usr/lib/keeper/step3)");
    // Deeper than EXEC_FOLLOW_DEPTH is not seen: the reboot proof's kernel view judges it.
    expect(await sh(chain(5), "boot_swap")).toBe("");
    // A compiled program is not read, and a script that only shows swap does not count.
    expect(await sh(machine({ "usr/bin/keeper": { content: "#!/bin/sh\nswapon --show\n", mode: 0o755 }, "etc/systemd/system/keeper.service": "[Service]\nExecStart=/usr/bin/keeper\n[Install]\nWantedBy=multi-user.target\n", "etc/systemd/system/multi-user.target.wants/keeper.service": { link: "/etc/systemd/system/keeper.service" } }), "boot_swap")).toBe("");
    // `swapon -a` reads fstab itself: harmful while a line is left, even with swap.target masked.
    const all = {
      "etc/systemd/system/all-swap.service": "[Service]\nExecStart=/sbin/swapon -a\n",
      "etc/systemd/system/multi-user.target.wants/all-swap.service": { link: "/etc/systemd/system/all-swap.service" },
      "etc/systemd/system/swap.target": { link: "/dev/null" },
    };
    expect(await sh(machine({ ...all, ...fstab }), "boot_swap")).toBe("swapon -a\tall-swap.service (/etc/systemd/system/all-swap.service)");
    expect(await sh(machine(all), "boot_swap")).toBe("");
    const rcLocal = machine({ "etc/rc.local": { content: "#!/bin/sh\nswapon /swapfile\nexit 0\n", mode: 0o755 } });
    expect(await sh(rcLocal, "boot_swap")).toBe("swapon\t/etc/rc.local");
    expect(await sh(machine({ "etc/rc.local": { content: "#!/bin/sh\nswapon /swapfile\n", mode: 0o644 } }), "boot_swap")).toBe("");
    const cron = machine({ "etc/cron.d/swap": "@reboot root /sbin/swapon /swapfile\n0 * * * * root swapon --show\n" });
    expect(await sh(cron, "boot_swap")).toBe("swapon\tcron @reboot (/etc/cron.d/swap)");
  });
});

describe("the kernel's own view", () => {
  it("reads swap, sysctl and listeners from /proc, not from programs on PATH; names a mount laid over a /proc file", async () => {
    const root = machine({});
    // Stand-ins in every directory of the grader's PATH before the system's: never asked.
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), "checklib-bin-"));
    roots.push(bin);
    for (const name of ["swapon", "sysctl", "ss", "cat", "awk"]) fs.writeFileSync(path.join(bin, name), "#!/bin/sh\necho STAND-IN\n", { mode: 0o755 });
    const fake = path.join(bin, "swaps");
    fs.writeFileSync(fake, "Filename Type Size Used Priority\n");
    const run = await runInFakeRoot(
      `mount --bind ${bin} /usr/local/sbin\n${CHECK_LIB}\necho "path=$PATH"; swap_now | head -1; sysctl_now kernel.ostype; tcp_listening 1 | head -1; echo "total=$(swap_total_kb)"\n` +
        `echo before; kernel_view_covered /proc/swaps /proc/sys/kernel/ostype /sys/module; mount --bind ${fake} /proc/swaps; echo after; kernel_view_covered /proc/swaps /proc/meminfo`,
      { root, exact: READ_DIRS },
    );
    expect(run.stderr).toBe("");
    expect(run.stdout).not.toContain("STAND-IN");
    expect(run.stdout).toContain("path=/usr/sbin:/usr/bin:/sbin:/bin\n");
    expect(run.stdout).toContain("\nLinux\n");
    expect(run.stdout).toMatch(/total=\d+\nbefore\nafter\n/);
    expect(run.stdout.split("after\n")[1]).toBe("/proc/swaps (/proc/swaps)\n");
    expect(run.stdout).not.toContain("/proc/meminfo (");
  });
});

describe("answer files", () => {
  it("reads what a person meant: CRLF, a BOM, full-width characters from an IME, comments, spacing, case", async () => {
    const root = machine({
      "root/a.txt": "\uFEFF# my answers\r\nＳｗａｐ　＝　Ｋｕｂｅｓｐｒａｙ\r\n\r\n  Port－10250 =human   # sure?\r\nsysctlーzz = x\r\n",
    });
    expect(await sh(root, "answer_lines /root/a.txt")).toBe("swap = kubespray\nport-10250 =human\nsysctl-zz = x");
  });
});
