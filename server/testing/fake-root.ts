/**
 * Runs a script the way the platform runs checks (scriptCommand: `env -i`, fixed PATH, no
 * profile), but against a FAKE ROOT: in a private mount namespace (`unshare -m`) each top-level
 * directory of `root` is laid over the real one — a read-only overlay (the fake's files first,
 * then the machine's), or a plain bind mount for `writable` ones — and `bin` holds fake commands:
 * laid over /usr/sbin and /usr/bin (checklib.sh fixes PATH to the distribution's directories, so
 * they must be found there) and bound writable over /usr/local/bin (for the fakes' own files). Nothing outside the
 * namespace sees the mounts: this machine's /etc, /root and /usr are never read by mistake nor
 * written. Root only (mount namespaces).
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, realpathSync } from "node:fs";
import path from "node:path";
import { scriptCommand } from "../ssh/exec";

export interface FakeRootRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface FakeRootOptions {
  /** Directory whose top-level directories (etc, root, opt, usr, ...) are laid over the real ones; none: the machine as it is. */
  root?: string;
  /** Top-level names bound read-write instead of overlaid read-only (e.g. ["root", "opt"]). */
  writable?: readonly string[];
  /**
   * Directories that show only the fake's files (bound from the fake, or empty when the fake has
   * none), for helpers that read every file of a directory such as /etc/sysctl.d.
   */
  exact?: readonly string[];
  /** Fake commands, found before the machine's own: laid over /usr/sbin and /usr/bin, and bound over /usr/local/bin. */
  bin?: string;
  /** Script time limit, in seconds (the check's timeout). */
  timeoutSeconds?: number;
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

export function runInFakeRoot(script: string, opts: FakeRootOptions = {}): Promise<FakeRootRun> {
  const mounts: string[] = [];
  const root = opts.root ?? "/nonexistent";
  for (const entry of opts.root ? readdirSync(root, { withFileTypes: true }) : []) {
    if (!entry.isDirectory()) continue;
    const fake = path.join(root, entry.name);
    const real = `/${entry.name}`;
    mounts.push(
      opts.writable?.includes(entry.name)
        ? `mount --bind ${quote(fake)} ${real}`
        : `mount -t overlay labdeck-fake-root -o ${quote(`lowerdir=${fake}:${real}`)} ${real}`,
    );
  }
  const seen = new Set<string>();
  for (const dir of opts.exact ?? []) {
    // /lib/sysctl.d is /usr/lib/sysctl.d on a merged /usr: one directory, mounted once.
    const real = existsSync(dir) ? realpathSync(dir) : dir;
    if (seen.has(real)) continue;
    seen.add(real);
    const fake = path.join(root, dir);
    if (existsSync(fake)) mounts.push(`mount --bind ${quote(fake)} ${quote(dir)}`);
    else mounts.push(`{ [ ! -d ${quote(dir)} ] || mount -t tmpfs labdeck-fake-empty ${quote(dir)}; }`);
  }
  if (opts.bin) {
    mounts.push(`mount --bind ${quote(opts.bin)} /usr/local/bin`);
    for (const dir of ["/usr/sbin", "/usr/bin"])
      mounts.push(`mount -t overlay labdeck-fake-bin -o ${quote(`lowerdir=${opts.bin}:${dir}`)} ${dir}`);
  }
  const line = [...mounts, scriptCommand(opts.timeoutSeconds ?? 60)].join(" && ");
  return new Promise((resolve, reject) => {
    const child = spawn("unshare", ["--mount", "--propagation", "private", "/bin/sh", "-c", line], { stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString("utf8")));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(script);
  });
}
