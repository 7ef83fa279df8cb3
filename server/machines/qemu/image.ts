/**
 * Builds a lab image from Debian packages: debootstrap (minbase) into a directory, the guest
 * files and units of guest.ts, a small initrd, then `mkfs.ext4 -d` into a sparse raw disk and
 * `qemu-img convert` to the read-only base every VM's overlay sits on.
 *
 *   <dataDir>/images/<recipeHash>/base.qcow2     root filesystem (/dev/vda), mode 0444
 *                                /vmlinuz        kernel for direct boot
 *                                /initrd.img
 *                                /manifest.json  written last: its presence marks a complete build
 *
 * A build happens in `<dataDir>/images/.build-<hash>-<pid>/` and is renamed into place only when
 * complete, so a crash never leaves a half image under the final name. Needs root (debootstrap,
 * chroot, mount).
 */
import fs from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { requireTools, run } from "./command";
import { DISABLED_UNITS, ENABLED_UNITS, GUEST_DIRECTORIES, INITRAMFS_CONF, MASKED_UNITS, guestFiles } from "../images/guest";
import { debianMirror } from "./mirror";
import { isAlive } from "./processes";
import { ImageRecipe, DEBIAN_BASE_RECIPE, needsUpstream, recipeHash, recipePackages, type UpstreamSource } from "../images/recipe";

/** Longest a debootstrap may take (downloads ~200 packages, unpacks, configures), in ms. */
const DEBOOTSTRAP_TIMEOUT_MS = 30 * 60_000;
/** Longest the in-chroot set-up (unit enabling, recipe lines, initramfs) may take, in ms. */
const SETUP_TIMEOUT_MS = 15 * 60_000;
/** Longest mkfs.ext4 -d or qemu-img convert may take, in ms. */
const DISK_TIMEOUT_MS = 15 * 60_000;
/** How long the pre-build probe waits for each upstream (non-Debian) URL, in ms. */
const UPSTREAM_PROBE_TIMEOUT_MS = 10_000;
/** How long a second builder of the same image waits for the first one, in ms. */
const CONCURRENT_BUILD_WAIT_MS = 45 * 60_000;
/** Polling interval while waiting for a concurrent build, in ms. */
const CONCURRENT_BUILD_POLL_MS = 1_000;
/**
 * Packages a minbase debootstrap of DEBIAN_BASE_RECIPE retrieves (measured: 197); only used to
 * turn "Retrieving <pkg>" lines into a percentage before the real count is known.
 */
const EXPECTED_PACKAGE_COUNT = 200;

const MANIFEST = "manifest.json";
const BASE = "base.qcow2";
const KERNEL = "vmlinuz";
const INITRD = "initrd.img";

export const ImageManifest = z.object({
  hash: z.string(),
  recipe: ImageRecipe,
  packages: z.array(z.string()),
  mirror: z.string(),
  kernelVersion: z.string(),
  builtAt: z.string(),
  /** Wall-clock seconds per build phase. */
  seconds: z.record(z.string(), z.number()),
  /** Size of base.qcow2 on disk, bytes. */
  baseBytes: z.number(),
});
export type ImageManifest = z.infer<typeof ImageManifest>;

/** A complete image on disk: what vm.ts boots. */
export interface BuiltImage {
  hash: string;
  dir: string;
  base: string;
  kernel: string;
  initrd: string;
  manifest: ImageManifest;
}

export type BuildPhase = "prepare" | "debootstrap" | "configure" | "filesystem" | "convert" | "done";

export interface BuildProgress {
  phase: BuildPhase;
  /** Whole build, 0..100. */
  percent: number;
  /** The line or step this update is about. */
  message: string;
}

/** Share of the build (percent) each phase ends at; measured durations, rounded. */
const PHASE_END_PERCENT: Record<BuildPhase, number> = {
  prepare: 1,
  debootstrap: 80,
  configure: 90,
  filesystem: 96,
  convert: 100,
  done: 100,
};

export function imagesDir(dataDir: string): string {
  return path.join(path.resolve(dataDir), "images");
}

/** The complete image for `recipe` under `dataDir`, or null when there is none. */
export async function findImage(dataDir: string, recipe: ImageRecipe = DEBIAN_BASE_RECIPE): Promise<BuiltImage | null> {
  return readImage(path.join(imagesDir(dataDir), recipeHash(ImageRecipe.parse(recipe))));
}

/** Every complete image under `dataDir`. */
export async function listImages(dataDir: string): Promise<BuiltImage[]> {
  const entries = await fs.readdir(imagesDir(dataDir)).catch(() => [] as string[]);
  const images = await Promise.all(entries.filter((e) => !e.startsWith(".")).map((e) => readImage(path.join(imagesDir(dataDir), e))));
  return images.filter((i): i is BuiltImage => i !== null);
}

async function readImage(dir: string): Promise<BuiltImage | null> {
  const text = await fs.readFile(path.join(dir, MANIFEST), "utf8").catch(() => null);
  if (text === null) return null;
  const manifest = ImageManifest.safeParse(JSON.parse(text));
  if (!manifest.success) return null;
  const image = {
    hash: manifest.data.hash,
    dir,
    base: path.join(dir, BASE),
    kernel: path.join(dir, KERNEL),
    initrd: path.join(dir, INITRD),
    manifest: manifest.data,
  };
  for (const file of [image.base, image.kernel, image.initrd]) {
    if (!(await fs.stat(file).catch(() => null))?.isFile()) return null;
  }
  return image;
}

export interface BuildOptions {
  dataDir: string;
  recipe?: ImageRecipe;
  /** Debian mirror URL; default: the host's own apt sources (mirror.ts). */
  mirror?: string;
  onProgress?: (progress: BuildProgress) => void;
}

/**
 * Returns the complete image for the recipe, building it first when there is none. Concurrent
 * calls for the same image (in this or another process) build it once.
 */
export async function buildImage(options: BuildOptions): Promise<BuiltImage> {
  const recipe = ImageRecipe.parse(options.recipe ?? DEBIAN_BASE_RECIPE);
  const hash = recipeHash(recipe);
  const root = imagesDir(options.dataDir);
  const finalDir = path.join(root, hash);
  const progress = options.onProgress ?? (() => undefined);

  const existing = await readImage(finalDir);
  if (existing) {
    progress({ phase: "done", percent: 100, message: `image ${recipe.name} ${hash} already built` });
    return existing;
  }
  // Before anything slow: a variant that downloads from outside Debian fails here, in seconds,
  // where those sources are unreachable (this workplace), instead of after the debootstrap.
  await checkUpstream(recipe);
  const tools = await requireTools(["debootstrap", "qemu-img", "mkfs.ext4", "chroot"]);
  if (process.getuid?.() !== 0) throw new Error("building a lab image needs root (debootstrap, chroot, mount)");
  const mirror = await debianMirror(recipe.suite, options.mirror);
  await fs.mkdir(root, { recursive: true });

  const release = await takeBuildLock(root, hash, finalDir);
  if (release === "built-by-other") {
    const built = await readImage(finalDir);
    if (built) return built;
    throw new Error(`image ${hash}: a concurrent build finished but left no complete image in ${finalDir}`);
  }
  try {
    // The lock may have been released by a builder that just finished this very image.
    const done = await readImage(finalDir);
    if (done) return done;
    await removeStaleBuilds(root);
    // A half-built directory under the final name (from a builder before this one) is not reused.
    if (await fs.stat(finalDir).catch(() => null)) await removeBuildDir(finalDir);
    const work = path.join(root, `.build-${hash}-${process.pid}`);
    await removeBuildDir(work);
    await fs.mkdir(work, { recursive: true });
    try {
      await buildInto(work, { recipe, hash, mirror, tools, progress });
      await fs.rename(work, finalDir);
    } catch (error) {
      await removeBuildDir(work).catch(() => undefined);
      throw error;
    }
  } finally {
    await release();
  }
  const built = await readImage(finalDir);
  if (!built) throw new Error(`image ${hash}: build finished but ${finalDir} is not a complete image`);
  progress({ phase: "done", percent: 100, message: `image ${recipe.name} ${hash} ready in ${finalDir}` });
  return built;
}

/** A variant's upstream source cannot be reached from this host; the message says what to do. */
export class UpstreamUnreachableError extends Error {
  override readonly name = "UpstreamUnreachableError";
  constructor(
    readonly variant: string,
    readonly source: UpstreamSource,
    reason: string,
  ) {
    super(
      `image variant ${variant} cannot be built on this host: it downloads ${source.name} from ${source.url}, ` +
        `which is unreachable from here (${reason}). This workplace reaches only Debian's mirror and the npm registry, ` +
        `and ${variant} installs software Debian does not ship. Build it on a host with internet access ` +
        `(\`npm run labdeck -- image build --variant ${variant}\`) and copy its directory <data dir>/images/<hash>/ ` +
        `into this server's data directory (\`image list\` shows the hash), or use labs that run on debian-base.`,
    );
  }
}

/**
 * Fetches every upstream URL of the recipe (body discarded) and throws UpstreamUnreachableError
 * for the first one that does not answer 2xx within the timeout. Recipes from Debian alone pass
 * without any request.
 */
export async function checkUpstream(recipe: ImageRecipe, timeoutMs = UPSTREAM_PROBE_TIMEOUT_MS): Promise<void> {
  for (const source of recipe.upstream) {
    let reason: string | undefined;
    try {
      const response = await fetch(source.url, { signal: AbortSignal.timeout(timeoutMs), redirect: "follow" });
      await response.body?.cancel();
      if (!response.ok) reason = `HTTP ${response.status}`;
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      reason = cause?.code ?? cause?.message ?? (error as Error).message;
    }
    if (reason !== undefined) throw new UpstreamUnreachableError(recipe.name, source, reason);
  }
}

interface BuildParams {
  recipe: ImageRecipe;
  hash: string;
  mirror: string;
  tools: Record<"debootstrap" | "qemu-img" | "mkfs.ext4" | "chroot", string>;
  progress: (progress: BuildProgress) => void;
}

/** Runs `fn` as build phase `phase`, noting its seconds (to a tenth) in `seconds`. */
type Timed = <T>(phase: string, fn: () => Promise<T>) => Promise<T>;

function phaseTimer(seconds: Record<string, number>): Timed {
  return async (phase, fn) => {
    const started = Date.now();
    try {
      return await fn();
    } finally {
      seconds[phase] = Math.round((Date.now() - started) / 100) / 10;
    }
  };
}

async function buildInto(work: string, p: BuildParams): Promise<void> {
  const rootfs = path.join(work, "rootfs");
  const seconds: Record<string, number> = {};
  const timed = phaseTimer(seconds);
  const packages = recipePackages(p.recipe);
  p.progress({ phase: "prepare", percent: 0, message: `building ${p.recipe.name} (${p.hash}) from ${p.mirror}` });
  await debootstrap(work, rootfs, packages, p, timed);
  p.progress({ phase: "configure", percent: PHASE_END_PERCENT.debootstrap, message: "configuring the image" });
  await timed("configure", () => configure(rootfs, p));
  const kernelVersion = await copyKernel(rootfs, work);
  const base = await makeDisk(work, rootfs, p, timed);
  const manifest: ImageManifest = {
    hash: p.hash,
    recipe: p.recipe,
    packages,
    mirror: p.mirror,
    kernelVersion,
    builtAt: new Date().toISOString(),
    seconds,
    baseBytes: (await fs.stat(base)).blocks * 512,
  };
  await fs.writeFile(path.join(work, MANIFEST), JSON.stringify(manifest, null, 2) + "\n");
}

/**
 * 1. debootstrap. The initramfs settings go in first: installing the kernel builds an initrd,
 * and with Debian's MODULES=most that alone took ~80 s (twice, with a trigger).
 */
async function debootstrap(work: string, rootfs: string, packages: readonly string[], p: BuildParams, timed: Timed): Promise<void> {
  const debCache = path.join(path.dirname(work), ".debs");
  await fs.mkdir(debCache, { recursive: true });
  const conf = path.join(rootfs, INITRAMFS_CONF.path);
  await fs.mkdir(path.dirname(conf), { recursive: true });
  await fs.writeFile(conf, INITRAMFS_CONF.content);
  await timed("debootstrap", () =>
    run(
      p.tools.debootstrap,
      [
        "--variant=minbase",
        `--include=${packages.join(",")}`,
        "--components=main",
        // Downloaded .debs are kept for the next build (another recipe, a builder change).
        `--cache-dir=${debCache}`,
        p.recipe.suite,
        rootfs,
        p.mirror,
      ],
      { timeoutMs: DEBOOTSTRAP_TIMEOUT_MS, onLine: debootstrapProgress(p.progress) },
    ),
  );
}

/** 2. guest files, units, recipe lines, small initrd */
async function configure(rootfs: string, p: BuildParams): Promise<void> {
  for (const file of guestFiles()) {
    const target = path.join(rootfs, file.path);
    await fs.mkdir(path.dirname(target), { recursive: true });
    await fs.rm(target, { force: true }); // resolv.conf and others may be symlinks
    await fs.writeFile(target, file.content, { mode: file.mode ?? 0o644 });
    await fs.chmod(target, file.mode ?? 0o644);
  }
  // The guest's resolv.conf points at QEMU's DNS (10.0.2.3), which the chroot cannot use:
  // downloads during the build resolve with the host's, then the guest file goes back.
  const resolv = path.join(rootfs, "etc/resolv.conf");
  const guestResolv = needsUpstream(p.recipe) ? await fs.readFile(resolv) : null;
  if (guestResolv) await fs.copyFile("/etc/resolv.conf", resolv);
  const script = "/root/labdeck-setup.sh";
  await fs.writeFile(path.join(rootfs, script), setupScript(p.recipe), { mode: 0o700 });
  await withProc(rootfs, () =>
    run(p.tools.chroot, [rootfs, "/bin/sh", "-eu", script], {
      timeoutMs: SETUP_TIMEOUT_MS,
      env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", LC_ALL: "C.UTF-8", DEBIAN_FRONTEND: "noninteractive", HOME: "/root" },
      onLine: (line) => p.progress({ phase: "configure", percent: PHASE_END_PERCENT.debootstrap + 5, message: line }),
    }),
  );
  await fs.rm(path.join(rootfs, script));
  if (guestResolv) await fs.writeFile(resolv, guestResolv);
}

/** 3. kernel + initrd for direct boot; returns the kernel version. */
async function copyKernel(rootfs: string, work: string): Promise<string> {
  const boot = path.join(rootfs, "boot");
  const kernels = (await fs.readdir(boot)).filter((f) => f.startsWith("vmlinuz-")).sort();
  if (kernels.length !== 1) throw new Error(`expected one kernel in ${boot}, found: ${kernels.join(", ") || "none"}`);
  const kernelVersion = kernels[0]!.slice("vmlinuz-".length);
  await fs.copyFile(path.join(boot, `vmlinuz-${kernelVersion}`), path.join(work, KERNEL));
  await fs.copyFile(path.join(boot, `initrd.img-${kernelVersion}`), path.join(work, INITRD));
  return kernelVersion;
}

/** 4. ext4 filesystem from the directory, into a sparse raw disk; 5. qcow2 base (only used blocks), read-only. Returns the base's path. */
async function makeDisk(work: string, rootfs: string, p: BuildParams, timed: Timed): Promise<string> {
  p.progress({ phase: "filesystem", percent: PHASE_END_PERCENT.configure, message: "mkfs.ext4 -d rootfs" });
  const raw = path.join(work, "root.raw");
  await timed("filesystem", async () => {
    await fs.writeFile(raw, "");
    await fs.truncate(raw, p.recipe.diskGiB * 1024 ** 3);
    await run(p.tools["mkfs.ext4"], ["-q", "-F", "-L", "labdeck-root", "-d", rootfs, raw], { timeoutMs: DISK_TIMEOUT_MS });
  });
  await removeBuildDir(rootfs);

  p.progress({ phase: "convert", percent: PHASE_END_PERCENT.filesystem, message: "qemu-img convert to qcow2" });
  const base = path.join(work, BASE);
  await timed("convert", () =>
    run(p.tools["qemu-img"], ["convert", "-f", "raw", "-O", "qcow2", raw, base], { timeoutMs: DISK_TIMEOUT_MS }),
  );
  await fs.rm(raw);
  await fs.chmod(base, 0o444);
  return base;
}

/** The script run in the chroot: enable/disable units, the recipe's own lines, small initrd, clean-up. */
function setupScript(recipe: ImageRecipe): string {
  return [
    "# Written by server/machines/qemu/image.ts; runs once inside the image's chroot.",
    "export DEBIAN_FRONTEND=noninteractive",
    `mkdir -p ${GUEST_DIRECTORIES.join(" ")}`,
    ...DISABLED_UNITS.map((u) => `systemctl disable --quiet ${u} 2>/dev/null || true`),
    `systemctl mask --quiet ${MASKED_UNITS.join(" ")}`,
    `systemctl enable --quiet ${ENABLED_UNITS.join(" ")}`,
    // Each VM gets its host key from its seed; the image carries none.
    "rm -f /etc/ssh/ssh_host_*",
    "# recipe setup",
    ...recipe.setup,
    "# small initrd (MODULES=list, guest.ts)",
    "update-initramfs -u -k all",
    "apt-get clean",
    "rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/debconf/*-old /var/lib/dpkg/*-old",
    "",
  ].join("\n");
}

/**
 * debootstrap's stages, in order: the line that starts each, and its share of debootstrap's time
 * (measured on a lab-base build: download 16%, extract 7%, required packages 16%, unpacking and
 * configuring the rest 30% + 31%).
 */
const DEBOOTSTRAP_STAGES = [
  { name: "download", starts: /^I: Retrieving InRelease/, share: 0.16 },
  { name: "extract", starts: /^I: Extracting /, share: 0.07 },
  { name: "required", starts: /^I: (Installing core|Unpacking required) packages/, share: 0.16 },
  { name: "base-unpack", starts: /^I: Unpacking the base system/, share: 0.3 },
  { name: "base-configure", starts: /^I: Configuring the base system/, share: 0.31 },
] as const;
/** Packages debootstrap extracts first ("required" priority; measured: ~90 for bookworm minbase). */
const EXPECTED_REQUIRED_COUNT = 90;

/** Turns debootstrap's "I: ..." lines into progress within the debootstrap phase. */
function debootstrapProgress(progress: (p: BuildProgress) => void): (line: string) => void {
  let stage = 0;
  let retrieved = 0;
  let extracted = 0;
  let stageLines = 0;
  const start = PHASE_END_PERCENT.prepare;
  const span = PHASE_END_PERCENT.debootstrap - start;
  return (line) => {
    if (!/^[IWE]: /.test(line)) return;
    const next = DEBOOTSTRAP_STAGES.findIndex((s, i) => i > stage && s.starts.test(line));
    if (next > stage) {
      stage = next;
      stageLines = 0;
    }
    if (/^I: Retrieving (?!(In)?Release|Packages)/.test(line)) retrieved++;
    if (/^I: Extracting /.test(line)) extracted++;
    if (/^I: (Unpacking|Configuring) (?!required|the base)/.test(line)) stageLines++;
    const base = Math.max(1, retrieved - extracted);
    const within = [
      retrieved / EXPECTED_PACKAGE_COUNT,
      extracted / EXPECTED_REQUIRED_COUNT,
      stageLines / Math.max(1, 2 * extracted),
      stageLines / base,
      stageLines / base,
    ][stage]!;
    const done = DEBOOTSTRAP_STAGES.slice(0, stage).reduce((sum, s) => sum + s.share, 0);
    const fraction = /^I: Base system installed/.test(line) ? 1 : done + DEBOOTSTRAP_STAGES[stage]!.share * Math.min(1, within);
    progress({
      phase: "debootstrap",
      percent: Math.floor(start + span * fraction),
      message: line.startsWith("I: ") ? line.slice(3) : line,
    });
  };
}

/** Runs `fn` with a fresh proc filesystem mounted in the chroot, always unmounting it. */
async function withProc<T>(rootfs: string, fn: () => Promise<T>): Promise<T> {
  const proc = path.join(rootfs, "proc");
  await fs.mkdir(proc, { recursive: true });
  await run("mount", ["-t", "proc", "proc", proc]);
  try {
    return await fn();
  } finally {
    await run("umount", [proc]);
  }
}

/** Mount points at or below `dir`, deepest first (from /proc/self/mountinfo). */
async function mountsBelow(dir: string): Promise<string[]> {
  const info = await fs.readFile("/proc/self/mountinfo", "utf8");
  const prefix = path.resolve(dir);
  return info
    .split("\n")
    .map((l) => l.split(" ")[4])
    .filter((m): m is string => m !== undefined && (m === prefix || m.startsWith(prefix + "/")))
    .sort((a, b) => b.length - a.length);
}

/**
 * Deletes a build directory. Anything still mounted inside (proc of an interrupted chroot step)
 * is unmounted first; if that fails the directory is left alone rather than recursing into a
 * mounted filesystem.
 */
async function removeBuildDir(dir: string): Promise<void> {
  for (const mount of await mountsBelow(dir)) await run("umount", ["-l", mount]).catch(() => undefined);
  const left = await mountsBelow(dir);
  if (left.length > 0) throw new Error(`cannot remove ${dir}: still mounted: ${left.join(", ")}`);
  await fs.rm(dir, { recursive: true, force: true });
}

/** Removes `.build-*` directories whose builder process is gone. */
async function removeStaleBuilds(root: string): Promise<void> {
  for (const entry of await fs.readdir(root).catch(() => [] as string[])) {
    const match = /^\.build-[0-9a-f]+-(\d+)$/.exec(entry);
    if (match && !(await isAlive(Number(match[1])))) await removeBuildDir(path.join(root, entry));
  }
}

/**
 * One builder per image: an exclusive lock file holding the builder's pid. A lock whose pid is
 * gone is taken over. Returns the release function, or "built-by-other" when another builder
 * finished the image while we waited.
 */
async function takeBuildLock(root: string, hash: string, finalDir: string): Promise<(() => Promise<void>) | "built-by-other"> {
  const lock = path.join(root, `.build-${hash}.lock`);
  const deadline = Date.now() + CONCURRENT_BUILD_WAIT_MS;
  for (;;) {
    try {
      await fs.writeFile(lock, String(process.pid), { flag: "wx" });
      return () => fs.rm(lock, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const holder = Number((await fs.readFile(lock, "utf8").catch(() => "")).trim());
    if (!Number.isInteger(holder) || holder <= 0 || !(await isAlive(holder))) {
      await fs.rm(lock, { force: true });
      continue;
    }
    if (await readImage(finalDir)) return "built-by-other";
    if (Date.now() > deadline)
      throw new Error(`image ${hash}: still being built by process ${holder} after ${CONCURRENT_BUILD_WAIT_MS / 60_000} min`);
    await new Promise((r) => setTimeout(r, CONCURRENT_BUILD_POLL_MS));
  }
}
