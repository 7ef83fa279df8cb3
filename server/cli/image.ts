/**
 * Command line of the QEMU provider, for developers and the `labdeck` CLI (which imports the
 * exported functions). Standalone:
 *
 *   npx tsx server/cli/image.ts image build   [--data-dir D] [--mirror URL] [--variant NAME] [--format qcow2|containerdisk] [--out FILE]
 *   npx tsx server/cli/image.ts image variants
 *   npx tsx server/cli/image.ts image list    [--data-dir D]
 *   npx tsx server/cli/image.ts session up    [--data-dir D] [--machines a,b,c] [--lab SLUG] [--memory MIB] [--accel tcg|kvm|auto] [--id ID]
 *   npx tsx server/cli/image.ts session down  <id> [--data-dir D]
 *   npx tsx server/cli/image.ts session list  [--data-dir D]
 *
 * Results go to stdout as JSON; progress and logs to stderr. `session up` leaves the VMs running
 * and exits; `session down` removes them. Exit codes: 0 ok, 1 the operation failed, 2 bad command line.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { pathToFileURL } from "node:url";
import pino, { type Logger } from "pino";
import { z } from "zod";
import { parseEnv } from "../config";
import { detectAccel } from "../machines/qemu/accel";
import { buildImage, findImage, listImages, type BuildProgress, type BuiltImage } from "../machines/qemu/image";
import { qemuProvider } from "../machines/qemu/provider";
import { DEBIAN_BASE_RECIPE, needsUpstream, recipeByName, recipeHash, RECIPES } from "../machines/images/recipe";
import { SetId, setDir } from "../machines/qemu/state";
import { writeContainerDisk, type ContainerDiskResult } from "../machines/kubevirt/containerdisk";
import { containerDiskRecipe } from "../machines/kubevirt/containerdisk-recipe";

const EXIT_FAILURE = 1;
const EXIT_USAGE = 2;
/** Machines of a session when --machines is not given: the course's three. */
const DEFAULT_MACHINES = ["controlplane", "node01", "node02"];

const USAGE = `usage:
  cli.ts image build   [--data-dir D] [--mirror URL] [--variant ${Object.keys(RECIPES).join("|")}] [--format qcow2|containerdisk] [--out FILE]
                       (containerdisk: the variant + cloud-init, as an OCI archive for KubeVirt; push it with
                        skopeo copy oci-archive:FILE docker://REGISTRY/PATH/<variant>:<hash>)
  cli.ts image variants                    (which variants exist, which need downloads from outside Debian)
  cli.ts image list    [--data-dir D]
  cli.ts session up    [--data-dir D] [--machines ${DEFAULT_MACHINES.join(",")}] [--lab SLUG] [--memory MIB] [--accel tcg|kvm|auto] [--id ID]
  cli.ts session down  <id> [--data-dir D]
  cli.ts session list  [--data-dir D]`;

/** A CLI logger: pino to stderr, so stdout carries only the JSON result. */
function stderrLogger(): Logger {
  return pino({ level: parseEnv().LOG_LEVEL }, pino.destination(2));
}

export interface ImageBuildOptions {
  dataDir: string;
  mirror?: string;
  /** Image variant (recipe.ts RECIPES); default debian-base. */
  variant?: string;
  /** Progress lines; default: none. */
  onProgress?: (progress: BuildProgress) => void;
}

/** Builds (or finds) the lab base image; resolves with its paths and manifest. */
export function imageBuild(opts: ImageBuildOptions): Promise<BuiltImage> {
  const recipe = recipeByName(opts.variant ?? DEBIAN_BASE_RECIPE.name);
  return buildImage({ dataDir: opts.dataDir, recipe, mirror: opts.mirror, onProgress: opts.onProgress });
}

/**
 * Builds (or finds) the fleet flavour of a variant (the recipe + cloud-init, kubevirt/containerdisk-recipe.ts)
 * and writes it as a containerDisk OCI archive: `out`, default `<image dir>/containerdisk.oci.tar`.
 * Its tag is the image hash, which the kubevirt provider asks the registry for.
 */
export async function imageBuildContainerDisk(
  opts: ImageBuildOptions & { out?: string },
): Promise<{ image: BuiltImage; archive: ContainerDiskResult; reference: string }> {
  const variant = opts.variant ?? DEBIAN_BASE_RECIPE.name;
  const image = await buildImage({
    dataDir: opts.dataDir,
    recipe: containerDiskRecipe(recipeByName(variant)),
    mirror: opts.mirror,
    onProgress: opts.onProgress,
  });
  const reference = `${variant}:${image.hash}`;
  const archive = await writeContainerDisk(
    {
      disk: image.base,
      kernel: image.kernel,
      initrd: image.initrd,
      reference,
      annotations: {
        "org.opencontainers.image.title": `labdeck ${variant}`,
        "io.labdeck.recipe-hash": image.hash,
        "io.labdeck.kernel-version": image.manifest.kernelVersion,
      },
    },
    opts.out ?? path.join(image.dir, "containerdisk.oci.tar"),
  );
  return { image, archive, reference };
}

export interface SessionUpOptions {
  dataDir: string;
  machines?: string[];
  labSlug?: string;
  sessionId?: string;
  memoryMiB?: number;
  /** auto: a timed KVM boot decides (accel.ts). Default tcg. */
  accel?: "tcg" | "kvm" | "auto";
  log?: Logger;
}

export interface SessionUpResult {
  sessionId: string;
  machines: {
    name: string;
    host: string;
    port: number;
    user: string;
    hostKey: string;
    /** Private key file, mode 0600, inside the session directory. */
    keyFile: string;
    /** An OpenSSH command that logs in with the pinned host key. */
    ssh: string;
  }[];
}

/**
 * Starts a session's VMs from the built lab base image (which must exist: `image build`) and
 * writes the session key and a known_hosts file beside them for `ssh`.
 */
export async function sessionUp(opts: SessionUpOptions): Promise<SessionUpResult> {
  const image = await findImage(opts.dataDir);
  if (!image)
    throw new Error(`no lab image under ${path.resolve(opts.dataDir)}/images: run \`image build --data-dir ${opts.dataDir}\` first`);
  const sessionId = SetId.parse(opts.sessionId ?? `cli-${randomBytes(4).toString("hex")}`);
  const log = opts.log ?? stderrLogger();
  let accel: "tcg" | "kvm" = opts.accel === "kvm" ? "kvm" : "tcg";
  if (opts.accel === "auto") {
    const choice = await detectAccel(image);
    log.info({ accel: choice.accel, detail: choice.detail }, "accelerator chosen by a timed boot");
    accel = choice.accel;
  }
  const provider = qemuProvider({ dataDir: opts.dataDir, image, memoryMiB: opts.memoryMiB, accel, log });
  const machines = await provider.create({ sessionId, labSlug: opts.labSlug ?? "cli", machines: opts.machines ?? DEFAULT_MACHINES });
  const dir = setDir(opts.dataDir, sessionId);
  const keyFile = path.join(dir, "id_ed25519");
  const knownHosts = path.join(dir, "known_hosts");
  await fs.writeFile(keyFile, machines[0]!.privateKey, { mode: 0o600 });
  await fs.writeFile(knownHosts, machines.map((m) => `[${m.host}]:${m.port} ${m.hostKey}\n`).join(""), { mode: 0o600 });
  return {
    sessionId,
    machines: machines.map((m) => ({
      name: m.name,
      host: m.host,
      port: m.port,
      user: m.user,
      hostKey: m.hostKey,
      keyFile,
      ssh: `ssh -i ${keyFile} -o UserKnownHostsFile=${knownHosts} -o StrictHostKeyChecking=yes -p ${m.port} ${m.user}@${m.host}`,
    })),
  };
}

/** Stops a session's VMs and switch and deletes its directory. Idempotent. */
export async function sessionDown(opts: { dataDir: string; sessionId: string; log?: Logger }): Promise<void> {
  const provider = qemuProvider({ dataDir: opts.dataDir, log: opts.log ?? stderrLogger() });
  await provider.destroy(opts.sessionId, []);
}

/** Every session under the data directory with its machines' state. */
export async function sessionList(opts: { dataDir: string; log?: Logger }) {
  const provider = qemuProvider({ dataDir: opts.dataDir, log: opts.log ?? stderrLogger() });
  return provider.list();
}

// ---------------------------------------------------------------------------------------------
// Standalone entry

const Flags = z.strictObject({
  "data-dir": z.string().min(1).optional(),
  mirror: z.string().url().optional(),
  variant: z
    .string()
    .refine((v) => Object.hasOwn(RECIPES, v), `unknown image variant (known: ${Object.keys(RECIPES).join(", ")})`)
    .optional(),
  machines: z
    .string()
    .transform((s) => s.split(",").map((n) => n.trim()))
    .optional(),
  lab: z.string().min(1).optional(),
  memory: z.coerce.number().int().min(128).max(65536).optional(),
  accel: z.enum(["tcg", "kvm", "auto"]).optional(),
  id: SetId.optional(),
  format: z.enum(["qcow2", "containerdisk"]).optional(),
  out: z.string().min(1).optional(),
});

/** A bad command line; its message ends with the usage text. */
export class CliUsageError extends Error {
  readonly code = "USAGE";
}

function usageError(message: string): never {
  throw new CliUsageError(`${message}\n${USAGE}`);
}

/**
 * Runs one `image ...` or `session ...` command (argv without the program name), printing the
 * JSON result to stdout. Throws CliUsageError for a bad command line, Error when the command fails.
 */
export async function runQemuCli(argv: string[]): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        "data-dir": { type: "string" },
        mirror: { type: "string" },
        variant: { type: "string" },
        machines: { type: "string" },
        lab: { type: "string" },
        memory: { type: "string" },
        accel: { type: "string" },
        id: { type: "string" },
        format: { type: "string" },
        out: { type: "string" },
      },
    });
  } catch (error) {
    usageError((error as Error).message);
  }
  const flags = Flags.safeParse(Object.fromEntries(Object.entries(parsed.values).filter(([, v]) => v !== undefined)));
  if (!flags.success) usageError(flags.error.issues.map((i) => `--${i.path.join(".")}: ${i.message}`).join("\n       "));
  const env = parseEnv();
  const dataDir = flags.data["data-dir"] ?? env.LABDECK_DATA_DIR;
  const [group, command, ...rest] = parsed.positionals;
  const print = (value: unknown) => console.log(JSON.stringify(value, null, 2));

  if (group === "image" && command === "build" && rest.length === 0) {
    let lastPercent = -1;
    const started = Date.now();
    const build = {
      dataDir,
      variant: flags.data.variant,
      mirror: flags.data.mirror ?? env.LABDECK_DEBIAN_MIRROR,
      // One line per percent (debootstrap alone says ~600 things), plus every warning.
      onProgress: (p: BuildProgress) => {
        if (p.percent === lastPercent && !/^[WE]: /.test(p.message)) return;
        lastPercent = p.percent;
        console.error(`[${String(p.percent).padStart(3)}%] ${p.phase}: ${p.message}`);
      },
    };
    if (flags.data.out && flags.data.format !== "containerdisk") usageError("--out is for --format containerdisk");
    if (flags.data.format === "containerdisk") {
      const { image, archive, reference } = await imageBuildContainerDisk({ ...build, out: flags.data.out });
      console.error(`push it: skopeo copy oci-archive:${archive.file} docker://<LABDECK_KUBEVIRT_IMAGE_REPOSITORY>/${reference}`);
      print({ hash: image.hash, reference, archive, seconds: Math.round((Date.now() - started) / 1000) });
    } else {
      const image = await imageBuild(build);
      print({ ...image, seconds: Math.round((Date.now() - started) / 1000) });
    }
  } else if (group === "image" && command === "variants" && rest.length === 0) {
    print(
      Object.values(RECIPES).map((r) => ({
        name: r.name,
        hash: recipeHash(r),
        summary: r.summary,
        needsUpstream: needsUpstream(r),
        upstream: r.upstream.map((u) => ({ name: u.name, url: u.url, pinned: u.sha256 ?? u.gpgFingerprint ?? null })),
      })),
    );
  } else if (group === "image" && command === "list" && rest.length === 0) {
    print(await listImages(dataDir));
  } else if (group === "session" && command === "up" && rest.length === 0) {
    print(
      await sessionUp({
        dataDir,
        machines: flags.data.machines,
        labSlug: flags.data.lab,
        sessionId: flags.data.id,
        memoryMiB: flags.data.memory,
        accel: flags.data.accel,
      }),
    );
  } else if (group === "session" && command === "down" && rest.length === 1) {
    const id = SetId.safeParse(rest[0]);
    if (!id.success) usageError(`session id: ${id.error.issues[0]!.message}`);
    await sessionDown({ dataDir, sessionId: id.data });
    print({ destroyed: id.data });
  } else if (group === "session" && command === "list" && rest.length === 0) {
    print(await sessionList({ dataDir }));
  } else {
    usageError(`unknown command: ${parsed.positionals.join(" ") || "(none)"}`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  runQemuCli(process.argv.slice(2)).then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(error instanceof CliUsageError ? EXIT_USAGE : EXIT_FAILURE);
    },
  );
}
