/**
 * Running the host tools the QEMU provider depends on: a check that names the Debian package to
 * install when a tool is missing, and a command runner whose errors name the command, its exit
 * status and the tail of its output.
 */
import { spawn } from "node:child_process";
import { access, constants } from "node:fs/promises";
import path from "node:path";

/** Host tools and the Debian package that provides each. */
export const HOST_TOOLS = {
  debootstrap: "debootstrap",
  "qemu-img": "qemu-utils",
  "qemu-system-x86_64": "qemu-system-x86",
  "mkfs.ext4": "e2fsprogs",
  vde_switch: "vde-switch",
  chroot: "coreutils",
  ip: "iproute2",
  nft: "nftables",
  nsenter: "util-linux",
} as const;
export type HostTool = keyof typeof HOST_TOOLS;

/**
 * Where tools are looked up, in order: where Debian packages put them. Not PATH: sbin directories
 * are often missing from a non-login PATH, and the server reads no environment outside config.ts.
 */
const TOOL_DIRS = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];

/** How much of a failed command's output goes into its error message, in characters. */
const OUTPUT_TAIL_CHARS = 3_000;
/** Default timeout of one command, in ms; long steps (debootstrap) pass their own. */
const DEFAULT_COMMAND_TIMEOUT_MS = 60_000;

/** Absolute path of a tool, or undefined. */
export async function findTool(tool: string): Promise<string | undefined> {
  for (const dir of TOOL_DIRS) {
    const candidate = path.join(dir, tool);
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

/**
 * Resolves each tool to its absolute path; throws one error listing every missing tool and the
 * apt-get command that installs them.
 */
export async function requireTools<T extends HostTool>(tools: readonly T[]): Promise<Record<T, string>> {
  const found = {} as Record<T, string>;
  const missing: T[] = [];
  for (const tool of tools) {
    const where = await findTool(tool);
    if (where) found[tool] = where;
    else missing.push(tool);
  }
  if (missing.length > 0) {
    const packages = [...new Set(missing.map((t) => HOST_TOOLS[t]))];
    throw new Error(
      `missing host tool${missing.length > 1 ? "s" : ""} ${missing.join(", ")}: install with ` +
        `apt-get install -y ${packages.join(" ")} (or run scripts/install-deps.sh)`,
    );
  }
  return found;
}

export interface RunOptions {
  /** Kill the command after this long, in ms. */
  timeoutMs?: number;
  /** Called with each complete output line (stdout and stderr), without the newline. */
  onLine?: (line: string) => void;
  /** The whole environment of the command (nothing is inherited when given). */
  env?: Record<string, string>;
  cwd?: string;
}

/** Runs a command to completion and resolves with its stdout; rejects with a message naming it. */
export function run(cmd: string, args: readonly string[], options: RunOptions = {}): Promise<string> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    // Next's types make NODE_ENV a required member of ProcessEnv; a command's own environment has none.
    const env = options.env as NodeJS.ProcessEnv | undefined;
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"], env, cwd: options.cwd });
    let stdout = "";
    let combined = "";
    const partial = { out: "", err: "" };
    const feed = (which: "out" | "err", chunk: Buffer) => {
      const text = chunk.toString("utf8");
      if (which === "out") stdout += text;
      combined = (combined + text).slice(-OUTPUT_TAIL_CHARS * 2);
      if (!options.onLine) return;
      const lines = (partial[which] + text).split("\n");
      partial[which] = lines.pop() ?? "";
      for (const line of lines) options.onLine(line);
    };
    child.stdout.on("data", (c: Buffer) => feed("out", c));
    child.stderr.on("data", (c: Buffer) => feed("err", c));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, timeoutMs);
    const describe = [cmd, ...args].join(" ");
    child.once("error", (error) => {
      clearTimeout(timer);
      reject(new Error(`command failed to start: ${describe}: ${error.message}`));
    });
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      if (options.onLine) {
        if (partial.out) options.onLine(partial.out);
        if (partial.err) options.onLine(partial.err);
      }
      if (code === 0) return resolve(stdout);
      const status = timedOut ? `killed after ${timeoutMs} ms` : signal ? `killed by ${signal}` : `exit ${code}`;
      const tail = combined.trim().slice(-OUTPUT_TAIL_CHARS);
      reject(new Error(`command failed: ${describe} (${status})${tail ? `:\n${tail}` : ""}`));
    });
  });
}
