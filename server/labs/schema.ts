/**
 * The shape of lab content on disk: `labs/<slug>/lab.yaml`. Course authors edit these files in
 * git; server/labs/load.ts parses them with the schemas below and reports every problem with the
 * file and field it is in. Add new manifest fields here (with `.describe()`), never by reading
 * raw YAML elsewhere.
 */
import { z } from "zod";
import { RECIPES } from "../machines/images/recipe";

/** A lab's slug is its directory name and URL segment; checked before any path is built from it. */
export const LAB_SLUG_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** A machine name is a hostname label the learner sees on a terminal tab (max 31 characters). */
export const MACHINE_NAME_PATTERN = /^[a-z][a-z0-9-]{0,30}$/;

/** The machines a lab gets unless its manifest says otherwise: the course's three-node layout. */
export const DEFAULT_MACHINES = ["controlplane", "node01", "node02"] as const;

export const LabSlug = z
  .string()
  .regex(LAB_SLUG_PATTERN, `must match ${LAB_SLUG_PATTERN} (lowercase letters, digits, hyphens)`)
  .describe("Directory name under labs/ and URL segment of the lab");

export const MachineName = z
  .string()
  .regex(MACHINE_NAME_PATTERN, `must match ${MACHINE_NAME_PATTERN}`)
  .describe("Hostname of one machine in the lab");

/**
 * A path inside the lab's directory, written with forward slashes. Absolute paths and `..`
 * segments are refused so a manifest can never point the loader outside its own lab.
 */
export const LabRelativePath = z
  .string()
  .min(1)
  .refine((p) => !p.startsWith("/") && !p.includes("\\"), "must be a relative path with forward slashes")
  .refine((p) => p.split("/").every((part) => part !== ".." && part !== ""), "must stay inside the lab directory");

/** A step id is its folder name under steps/ and the key progress is stored under. */
export const STEP_ID_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** Default and bounds of a check's timeout, in seconds; the grader kills a check that runs longer. */
export const DEFAULT_CHECK_TIMEOUT_S = 15;
export const MAX_CHECK_TIMEOUT_S = 300;

/** Files every step folder `steps/<id>/` holds; scripts must be executable (git keeps the bit). */
export const STEP_FILES = {
  text: "step.md",
  check: "check.sh",
  hint: "hint.md",
  solution: "solution.sh",
} as const;

/**
 * Optional fixture folders of a step, for `labs test` (never sent to learners): `shortcuts/*.sh`
 * reach states the check must refuse (true only until the next boot, or only looking right) and
 * `alternatives/*.sh` other correct fixes it must accept. Each runs from the state before the
 * step's solution (the machine is reset between them). A shortcut may name text the check's output
 * must contain, one `# expect-output: <text>` line each (e.g. which half fails). A fixture with a
 * `# reboot: yes` line is always followed by a real reboot and a second check (a shortcut must
 * still fail, with its `# expect-after-reboot: <text>` lines; an alternative must still pass):
 * for states a check can only judge by the kernel's view of the new boot.
 */
export const STEP_FIXTURE_DIRS = { shortcuts: "shortcuts", alternatives: "alternatives" } as const;
export const FIXTURE_EXPECT_OUTPUT = /^#\s*expect-output:\s*(.+?)\s*$/gm;
export const FIXTURE_EXPECT_AFTER_REBOOT = /^#\s*expect-after-reboot:\s*(.+?)\s*$/gm;
export const FIXTURE_REBOOT = /^#\s*reboot:\s*yes\s*$/m;

/** One weighted check of an exam task (partial credit). */
export const ExamCheck = z.strictObject({
  id: z.string().regex(STEP_ID_PATTERN, `must match ${STEP_ID_PATTERN}`).describe("The check's file is steps/<task id>/check-<id>.sh"),
  title: z.string().trim().min(1).max(200).describe("What it checks, shown in the exam's result"),
  points: z.number().int().min(1).max(100).describe("Points it is worth"),
});
export type ExamCheck = z.infer<typeof ExamCheck>;

/** Bounds of an exam's duration, minutes. */
export const MAX_EXAM_MINUTES = 300;

export const LabStep = z
  .strictObject({
    id: z.string().regex(STEP_ID_PATTERN, `must match ${STEP_ID_PATTERN}`).describe("Folder under steps/ with step.md, check.sh, hint.md, solution.sh"),
    title: z.string().trim().min(1).max(200).describe("Step title in the step list"),
    machine: MachineName.describe("Machine the check (and by default the solution) runs on"),
    timeoutSeconds: z
      .number()
      .int()
      .min(1)
      .max(MAX_CHECK_TIMEOUT_S)
      .default(DEFAULT_CHECK_TIMEOUT_S)
      .describe("The check is killed after this many seconds and reported as timed out"),
    solutionMachine: MachineName.optional().describe("Machine the solution runs on when not the check's machine"),
    verifyByReboot: z
      .boolean()
      .default(false)
      .describe(
        "The step is about boot-time state: `labs test` reboots the machine after the solution and after each alternative and requires the check to pass again; `labs validate` warns when it has no shortcuts/. In an exam: the task's checks run again on a new boot of its machine, and only what holds scores",
      ),
    points: z.number().int().min(1).max(100).default(1).describe("Exam only: the task's weight, in points"),
    checks: z
      .array(ExamCheck)
      .min(1)
      .max(10)
      .optional()
      .describe(
        "Exam only: partial credit, checks each worth some of the task's points (their points add up to the task's), each `steps/<id>/check-<check id>.sh`; without it, check.sh is worth all of them",
      ),
  })
  .describe("One step of the lab, or one task of an exam");
export type LabStep = z.infer<typeof LabStep>;

export const LabManifest = z
  .strictObject({
    title: z.string().trim().min(1).max(200).describe("Lab title shown in the catalog and the lab header"),
    summary: z.string().trim().min(1).max(1000).describe("One or two sentences for the catalog card"),
    durationMinutes: z
      .number()
      .int()
      .min(1)
      .max(600)
      .describe("Expected time to finish the lab, in minutes"),
    changesMachine: z
      .boolean()
      .default(false)
      .describe(
        "Its setup, steps or solutions change the machine itself (swap, kernel modules, sysctl, systemd units, packages): refused in the netns demo mode (LABDECK_MACHINES=netns-demo), whose machines are the server's own host",
      ),
    openToAll: z
      .boolean()
      .default(false)
      .describe("Any signed-in learner may start it; otherwise only learners of a live cohort that has the lab (admins and instructors always)"),
    image: z
      .string()
      .min(1)
      .superRefine((name, ctx) => {
        if (!Object.hasOwn(RECIPES, name)) {
          ctx.addIssue({ code: "custom", message: `unknown image variant "${name}" (known: ${Object.keys(RECIPES).join(", ")}; server/machines/images/recipe.ts)` });
        }
      })
      .default("debian-base")
      .describe("Image variant every machine of the lab boots from (server/machines/images/recipe.ts: RECIPES)"),
    network: z
      .strictObject({
        internet: z
          .boolean()
          .default(false)
          .describe(
            "The machines may open connections to the internet (never to the platform's host, private (RFC 1918), shared (100.64/10), link-local or loopback addresses; QEMU: through a network namespace per session with NAT, refused with the reason where the host cannot set that up); without it they reach only each other (eth1)",
          ),
      })
      .default({ internet: false })
      .describe("What the lab's machines may reach besides each other (ARCHITECTURE.md: Lab machine network)"),
    machines: z
      .array(MachineName)
      .min(1)
      .default([...DEFAULT_MACHINES])
      .superRefine((names, ctx) => {
        const seen = new Set<string>();
        names.forEach((name, i) => {
          if (seen.has(name)) {
            ctx.addIssue({ code: "custom", path: [i], message: `duplicate machine "${name}"` });
          }
          seen.add(name);
        });
      })
      .describe("Machines of the lab, in terminal tab order; names are unique"),
    lesson: LabRelativePath.refine((p) => p.endsWith(".md"), "must be a Markdown file (.md)")
      .default("lesson.md")
      .describe("Lesson text in Markdown, relative to the lab directory"),
    steps: z
      .array(LabStep)
      .default([])
      .superRefine((steps, ctx) => {
        const seen = new Set<string>();
        steps.forEach((step, i) => {
          if (seen.has(step.id)) ctx.addIssue({ code: "custom", path: [i, "id"], message: `duplicate step id "${step.id}"` });
          seen.add(step.id);
        });
      })
      .describe("Ordered steps; each unlocks when the previous one's check passes"),
    mode: z
      .enum(["lab", "exam"])
      .default("lab")
      .describe(
        "lab: steps unlock one by one as their checks pass; exam: the steps are tasks, all open, timed, with no results until the end, scored at the end (also after a reboot for verifyByReboot tasks)",
      ),
    exam: z
      .strictObject({
        durationMinutes: z.number().int().min(1).max(MAX_EXAM_MINUTES).describe("Time from the machines being ready to the automatic submission"),
        passPercent: z.number().int().min(1).max(100).default(66).describe("Share of the points needed to pass, percent"),
      })
      .optional()
      .describe("Exam only (mode: exam): its time and pass mark"),
    checkLib: LabRelativePath.optional().describe(
      "Shell file put before every check of this lab, after the platform's checklib.sh: the helpers its checks share",
    ),
    setup: z
      .record(MachineName, z.array(LabRelativePath).min(1))
      .default({})
      .describe("Per machine, scripts run in order (as root) to prepare the lab, including deliberate faults"),
  })
  .superRefine((lab, ctx) => {
    const machines = new Set(lab.machines);
    lab.steps.forEach((step, i) => {
      if (!machines.has(step.machine)) {
        ctx.addIssue({ code: "custom", path: ["steps", i, "machine"], message: `unknown machine "${step.machine}" (the lab has ${lab.machines.join(", ")})` });
      }
      if (step.solutionMachine && !machines.has(step.solutionMachine)) {
        ctx.addIssue({ code: "custom", path: ["steps", i, "solutionMachine"], message: `unknown machine "${step.solutionMachine}"` });
      }
    });
    examRules(lab, ctx);
    for (const name of Object.keys(lab.setup)) {
      if (!machines.has(name)) ctx.addIssue({ code: "custom", path: ["setup", name], message: `unknown machine "${name}"` });
    }
  })
  .describe("labs/<slug>/lab.yaml");
export type LabManifest = z.infer<typeof LabManifest>;

/** An exam has its time and pass mark; a task's checks share out its points; a lab has no exam fields. */
function examRules(
  lab: { mode: "lab" | "exam"; exam?: unknown; steps: { points: number; checks?: ExamCheck[] | undefined }[] },
  ctx: z.RefinementCtx,
): void {
  if (lab.mode === "exam" && !lab.exam) ctx.addIssue({ code: "custom", path: ["exam"], message: "an exam needs exam: { durationMinutes, passPercent }" });
  if (lab.mode === "lab" && lab.exam) ctx.addIssue({ code: "custom", path: ["exam"], message: "only for mode: exam" });
  lab.steps.forEach((step, i) => {
    if (lab.mode === "lab" && step.checks) ctx.addIssue({ code: "custom", path: ["steps", i, "checks"], message: "only for mode: exam" });
    if (!step.checks) return;
    const sum = step.checks.reduce((total, check) => total + check.points, 0);
    if (sum !== step.points)
      ctx.addIssue({ code: "custom", path: ["steps", i, "checks"], message: `the checks' points add up to ${sum}, the task is worth ${step.points}` });
    const ids = new Set<string>();
    step.checks.forEach((check, j) => {
      if (ids.has(check.id)) ctx.addIssue({ code: "custom", path: ["steps", i, "checks", j, "id"], message: `duplicate check id "${check.id}"` });
      ids.add(check.id);
    });
  });
}
