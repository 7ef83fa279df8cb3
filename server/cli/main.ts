/**
 * The `labdeck` command for operators and course authors (`npm run labdeck -- <command>`):
 *   labs validate                      check every lab under LABDECK_LABS_DIR (or --labs-dir)
 *   labs test <slug> [--machines M]    prove each step on real machines (M: qemu | netns | hosts:<file>)
 *   image build|list, session up|down|list   the local QEMU machines (server/cli/image.ts)
 *   labs move-sessions <slug> [--session ID]   live sessions onto the lab's current version (server/sessions/lab-versions.ts)
 *   users invite --email E --role R    an invitation link (server/cli/users.ts)
 * Exit codes: 0 ok, 1 the command found problems or failed, 2 bad command line.
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import pino from "pino";
import { z } from "zod";
import { parseEnv } from "../config";
import { labImageStatus } from "../machines/qemu/image-status";
import { formatLabIssue, labWarnings, listLabs, loadLab, LabError, type Lab } from "../labs/load";
import { formatResults, testLab, type LabTestMachines } from "../labs/lab-test";
import { createNetnsHosts } from "../testing/netns-hosts";
import { findImage } from "../machines/qemu/image";
import { qemuLabMachines } from "./lab-machines";
import { egressUnavailable } from "../machines/qemu/egress";
import { internetLabRefusal } from "../machines/qemu/network";
import { qemuProvider } from "../machines/qemu/provider";
import { recipeByName } from "../machines/images/recipe";
import { SshExecPool } from "../ssh/exec";
import { loadStaticHosts } from "../machines/static-hosts";

const USAGE = `usage:
  labdeck labs validate [--labs-dir DIR]
  labdeck labs test <slug> [--labs-dir DIR] [--machines qemu|netns|hosts:<file>] [--steps ID,ID]
  labdeck image build|list ...       labdeck session up|down|list ...   (QEMU; see --help of each)
  labdeck labs move-sessions <slug> [--session ID] [--labs-dir DIR]
                                     move live sessions (all of the lab's, or one) to the lab's current version
  labdeck users invite --email <address> --role learner|instructor|admin [--days N]

  --machines qemu          fresh local QEMU VMs from the built image (real kernels; reboots work)
  --machines netns         three throw-away sshd hosts in network namespaces (default; they share
                           this machine's kernel and /etc, so only for labs that change neither)
  --machines hosts:<file>  the first group of a static hosts file (real machines you provide)
  --steps ID,ID            test only these steps (the others' solutions still run, in order)`;

class UsageError extends Error {}

/** Start-to-SSH limit per VM for `labs test --machines qemu`, ms: generous, a CI host may be busy. */
const LAB_TEST_BOOT_TIMEOUT_MS = 600_000;

const Options = z.object({
  "labs-dir": z
    .string()
    .min(1)
    .default(process.env.LABDECK_LABS_DIR ?? path.resolve("labs")),
  machines: z
    .string()
    .regex(/^(qemu|netns|hosts:.+)$/, "must be qemu, netns or hosts:<file>")
    .default("netns"),
  steps: z
    .string()
    .regex(/^[a-z0-9-]+(,[a-z0-9-]+)*$/, "must be step ids separated by commas")
    .optional(),
  session: z.string().min(1).max(100).optional(),
});

async function main(argv: string[]): Promise<number> {
  if (argv[0] === "users") {
    const { runUsersCli, UsersUsageError } = await import("./users");
    try {
      return await runUsersCli(argv);
    } catch (error) {
      if (error instanceof UsersUsageError) throw new UsageError(error.message);
      throw error;
    }
  }
  if (argv[0] === "image" || argv[0] === "session") {
    const { runQemuCli } = await import("./image");
    await runQemuCli(argv);
    return 0;
  }
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { "labs-dir": { type: "string" }, machines: { type: "string" }, steps: { type: "string" }, session: { type: "string" } },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const options = Options.safeParse(parsed.values);
  if (!options.success) throw new UsageError(options.error.issues.map((i) => `--${i.path.join(".")}: ${i.message}`).join("\n"));
  const [group, command, ...rest] = parsed.positionals;
  const labsDir = options.data["labs-dir"];

  if (group === "labs" && command === "validate" && rest.length === 0) {
    const { labs, errors } = await listLabs(labsDir);
    for (const lab of labs) {
      const fixtures = lab.steps.reduce((n, s) => n + s.shortcuts.length + s.alternatives.length, 0);
      const exam = lab.manifest.mode === "exam" && lab.manifest.exam;
      const examNote = exam
        ? `exam: ${lab.steps.reduce((n, s) => n + s.points, 0)} points, ${exam.durationMinutes} min, pass ${exam.passPercent} %; `
        : "";
      process.stdout.write(`ok    ${lab.slug} (${examNote}${lab.steps.length} steps${fixtures ? `, ${fixtures} fixtures` : ""})\n`);
      for (const warning of labWarnings(lab)) process.stdout.write(`warn  ${formatLabIssue(warning)}\n`);
    }
    for (const error of errors) process.stdout.write(`error ${error.slug ?? "?"}\n${indent(error.message)}\n`);
    return errors.length > 0 ? 1 : 0;
  }
  if (group === "labs" && command === "move-sessions" && rest.length === 1) {
    return moveSessionsCli(labsDir, rest[0]!, options.data.session);
  }
  if (group === "labs" && command === "test" && rest.length === 1) {
    const lab = await loadLab(labsDir, rest[0]!);
    const only = options.data.steps ? new Set(options.data.steps.split(",")) : undefined;
    const unknown = [...(only ?? [])].filter((id) => !lab.steps.some((s) => s.id === id));
    if (unknown.length > 0) throw new UsageError(`--steps: ${lab.slug} has no step ${unknown.join(", ")}`);
    const { machines, close } = await openMachines(options.data.machines, lab);
    const pool = new SshExecPool();
    try {
      process.stdout.write(`testing ${lab.slug} (${lab.steps.length} steps) on ${options.data.machines}\n`);
      const results = await testLab(
        lab,
        machines,
        pool,
        (r) => process.stdout.write(`  ${r.ok ? "ok  " : "FAIL"} ${r.stepId}${r.problem ? `: ${r.problem}` : ""}\n`),
        (step, f) =>
          process.stdout.write(`    ${f.ok ? "ok  " : "FAIL"} ${step.id} ${f.kind} ${f.name}${f.problem ? `: ${f.problem}` : ""}\n`),
        { only },
      );
      process.stdout.write(`\n${formatResults(lab, results)}\n`);
      return results.every((r) => r.ok) ? 0 : 1;
    } finally {
      pool.closeAll();
      await close();
    }
  }
  throw new UsageError(`unknown command: ${parsed.positionals.join(" ") || "(none)"}`);
}

/**
 * Moves the lab's live sessions on another version (or the one named) to its current version,
 * one line per session; the learners' pages and dashboards follow through the event bus.
 */
async function moveSessionsCli(labsDir: string, slug: string, sessionId: string | undefined): Promise<number> {
  const { openTools } = await import("../compose/tools");
  const { moveSessionToCurrentVersion, outdatedSessions, VersionMoveError } = await import("../sessions/lab-versions");
  const tools = await openTools(parseEnv(), labsDir);
  const { db, bus, labs } = tools;
  try {
    const ids = sessionId ? [sessionId] : await outdatedSessions(db, labs, slug);
    let failed = 0;
    for (const id of ids) {
      try {
        const row = await db.labSession.findUnique({ where: { id }, select: { labSlug: true } });
        if (row?.labSlug !== slug) throw new VersionMoveError("noSuchSession", 404, `no session ${id} of lab ${slug}`);
        const move = await moveSessionToCurrentVersion(db, labs, id, null);
        if (move.moved) await Promise.all([bus.publishProgress(id), bus.publishSessionChange(id)]);
        process.stdout.write(
          `${move.moved ? "moved" : "same "} ${id} -> ${move.to.slice(0, 12)}: current ${move.currentStepId ?? "(done)"}, kept ${move.kept.length}, dropped ${move.dropped.length}${move.dropped.length ? ` (${move.dropped.join(", ")})` : ""}
`,
        );
      } catch (error) {
        failed++;
        process.stdout.write(`error ${id}: ${(error as Error).message}
`);
      }
    }
    if (ids.length === 0)
      process.stdout.write(`no live session of ${slug} runs another version
`);
    return failed > 0 ? 1 : 0;
  } finally {
    await tools.close();
  }
}

async function openMachines(spec: string, lab: Lab): Promise<{ machines: LabTestMachines; close: () => Promise<void> }> {
  const names = lab.manifest.machines;
  if (spec === "qemu") {
    const env = parseEnv();
    const noEgress = lab.manifest.network.internet ? await egressUnavailable() : null;
    if (noEgress) throw new Error(internetLabRefusal(lab.slug, noEgress));
    const image = await findImage(env.LABDECK_DATA_DIR, recipeByName(lab.manifest.image));
    if (!image) throw new Error((await labImageStatus(env.LABDECK_DATA_DIR, lab)).message.en);
    const log = pino({ level: env.LOG_LEVEL }, pino.destination(2));
    // An offline tool on a possibly busy host: boots may take long; a real failure still ends it.
    const provider = qemuProvider({
      dataDir: env.LABDECK_DATA_DIR,
      image,
      memoryMiB: env.LABDECK_VM_MEMORY_MIB,
      accel: "tcg",
      log,
      bootTimeoutMs: LAB_TEST_BOOT_TIMEOUT_MS,
    });
    return qemuLabMachines(provider, names, (line) => process.stdout.write(`${line}\n`), lab.manifest.network.internet);
  }
  if (spec === "netns") {
    // netns hosts are this machine: its kernel, swap, sysctl, systemd and /etc.
    if (lab.manifest.changesMachine)
      throw new Error(
        `${lab.slug} changes its machines (changesMachine: true): netns hosts would change this machine; use --machines qemu`,
      );
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-labtest-"));
    const set = await createNetnsHosts({ id: "lt", names: [...names], subnet: 90, dir });
    return {
      machines: {
        async endpoint(name) {
          const host = set.hosts.find((h) => h.name === name);
          if (!host) throw new Error(`no machine ${name}`);
          return host;
        },
      },
      close: async () => {
        await set.destroy();
        await fs.rm(dir, { recursive: true, force: true });
      },
    };
  }
  const file = spec.slice("hosts:".length);
  const hosts = await loadStaticHosts(file);
  const group = hosts.groups[0]!;
  return {
    machines: {
      async endpoint(name) {
        const m = group.machines.find((x) => x.name === name);
        if (!m) throw new Error(`${file}: group ${group.id} has no machine ${name}`);
        const privateKey = await fs.readFile(path.resolve(path.dirname(file), m.privateKeyPath), "utf8");
        return { name, host: m.host, port: m.port, user: m.user, privateKey, hostKey: m.hostKey };
      },
    },
    close: async () => {},
  };
}

function indent(text: string): string {
  return text
    .split("\n")
    .map((l) => `  ${l}`)
    .join("\n");
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: Error) => {
    if (error instanceof UsageError) {
      process.stderr.write(`labdeck: ${error.message}\n\n${USAGE}\n`);
      process.exit(2);
    }
    if ((error as { code?: unknown }).code === "USAGE") {
      // image/session usage errors (qemu/cli.ts CliUsageError) carry their own usage text.
      process.stderr.write(`labdeck: ${error.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`labdeck: ${error instanceof LabError ? `\n${error.message}` : error.message}\n`);
    process.exit(1);
  },
);
