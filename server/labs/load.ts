/**
 * Loads lab content from `labs/<slug>/`: parses lab.yaml with the LabManifest schema and reads
 * the lesson it names. Every problem becomes a LabError whose message names the file and the
 * field, e.g. `labs/x/lab.yaml: machines[1]: duplicate machine "node01"`, so a course author can
 * fix it without reading code.
 */
import { access, constants, readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { LineCounter, parseDocument } from "yaml";
import type { z } from "zod";
import { FIXTURE_EXPECT_AFTER_REBOOT, FIXTURE_EXPECT_OUTPUT, FIXTURE_REBOOT, LAB_SLUG_PATTERN, LabManifest, STEP_FILES, STEP_FIXTURE_DIRS, type LabStep } from "./schema";

/**
 * The lab content directory the Next.js pages read: LABDECK_LABS_DIR, else ./labs (the same
 * default as server/config.ts). Pages call this instead of parseEnv() so that rendering a page
 * does not depend on unrelated server variables being valid.
 */
export function labsDirFromEnv(): string {
  return process.env.LABDECK_LABS_DIR ?? path.resolve("labs");
}

/** Manifest file name inside a lab directory. */
export const MANIFEST_FILE = "lab.yaml";

export type Lab = {
  slug: string;
  manifest: LabManifest;
  lessonMarkdown: string;
  /** Absolute path of the lab directory. */
  dir: string;
  /** Steps in order, with their files read. Check, hint and solution never go to the browser as is. */
  steps: LoadedStep[];
  /** Per machine, the setup scripts in order. */
  setup: Record<string, LabScript[]>;
  /** The lab's own check helpers (manifest `checkLib`), put before each of its checks; "" when none. */
  checkLib: string;
};

export type LabScript = {
  /** Path for messages, e.g. `labs/x/steps/a/check.sh`. */
  file: string;
  content: string;
};

export type LoadedStep = LabStep & {
  textMarkdown: string;
  hintMarkdown: string;
  check: LabScript;
  solution: LabScript;
  /** `shortcuts/*.sh`, by file name: states the check must refuse (schema.ts STEP_FIXTURE_DIRS). */
  shortcuts: Fixture[];
  /** `alternatives/*.sh`, by file name: other correct fixes the check must accept. */
  alternatives: Fixture[];
  /** Exam only: the task's weighted checks (`checks:`, else check.sh worth all its points). */
  scoring?: ScoringCheck[];
};

/** One weighted check of an exam task, with its script. */
export type ScoringCheck = { id: string; title: string; points: number; script: LabScript };

/** The id of the one check of an exam task without `checks:` (its check.sh). */
export const WHOLE_TASK_CHECK = "check";

export type Fixture = LabScript & {
  /** File name without `.sh`. */
  name: string;
  /** Texts the check's output must contain after it (`# expect-output:` lines). */
  expectOutput: string[];
  /** A real reboot and a second check follow it, whatever `labs test` is told (`# reboot: yes`). */
  reboot: boolean;
  /** Texts a shortcut's check output must contain after that reboot (`# expect-after-reboot:` lines). */
  expectAfterReboot: string[];
};

/** One problem in lab content: where it is (file, then field inside it) and what is wrong. */
export type LabIssue = {
  /** File the problem is in, relative to the working directory when it lies beneath it. */
  file?: string;
  /** Field inside the file, e.g. `machines[1]`. */
  field?: string;
  message: string;
};

/** Lab content is missing or invalid. `message` has one line per issue. */
export class LabError extends Error {
  override readonly name = "LabError";

  constructor(
    /** Slug of the lab the problem belongs to, when known. */
    readonly slug: string | undefined,
    readonly issues: readonly LabIssue[],
  ) {
    super(issues.map(formatIssue).join("\n"));
  }
}

function formatIssue(issue: LabIssue): string {
  return [issue.file, issue.field, issue.message].filter((part) => part !== undefined && part !== "").join(": ");
}

/**
 * Loads one lab; throws LabError when the slug is malformed (before any disk access), the lab
 * does not exist, its manifest is invalid, or its lesson file is missing.
 */
export async function loadLab(labsDir: string, slug: string): Promise<Lab> {
  if (!LAB_SLUG_PATTERN.test(slug)) {
    throw new LabError(undefined, [{ message: `invalid lab slug ${JSON.stringify(slug)}: must match ${LAB_SLUG_PATTERN}` }]);
  }
  const dir = path.resolve(labsDir, slug);
  const manifestPath = path.join(dir, MANIFEST_FILE);
  const manifestFile = displayPath(manifestPath);

  const manifestText = await readTextFile(slug, manifestPath);
  if (manifestText === undefined) {
    throw new LabError(slug, [{ file: manifestFile, message: "file not found" }]);
  }
  const manifest = parseManifest(slug, manifestFile, manifestText);

  const lessonPath = path.resolve(dir, manifest.lesson);
  // The schema already refuses `..` and absolute paths; this guards the join itself.
  if (!lessonPath.startsWith(dir + path.sep)) {
    throw new LabError(slug, [{ file: manifestFile, field: "lesson", message: "must stay inside the lab directory" }]);
  }
  const lessonMarkdown = await readTextFile(slug, lessonPath);
  if (lessonMarkdown === undefined) {
    throw new LabError(slug, [
      { file: manifestFile, field: "lesson", message: `lesson file not found: ${displayPath(lessonPath)}` },
    ]);
  }
  const issues: LabIssue[] = [];
  const readPart = async (relative: string, field: string, executable: boolean): Promise<LabScript> => {
    const file = path.join(dir, relative);
    const content = await readTextFile(slug, file);
    if (content === undefined) {
      issues.push({ file: manifestFile, field, message: `file not found: ${displayPath(file)}` });
    } else if (executable && !(await isExecutable(file))) {
      issues.push({ file: displayPath(file), message: "not executable (chmod +x, and commit the mode)" });
    }
    return { file: displayPath(file), content: content ?? "" };
  };
  const readOptional = async (relative: string): Promise<LabScript> => {
    const file = path.join(dir, relative);
    return { file: displayPath(file), content: (await readTextFile(slug, file)) ?? "" };
  };
  /** A fixture folder's `*.sh`, sorted by name; anything else in it is an issue (a typo would silently not run). */
  const readFixtures = async (relative: string, field: string): Promise<Fixture[]> => {
    let entries;
    try {
      entries = await readdir(path.join(dir, relative), { withFileTypes: true });
    } catch (err) {
      if (isErrnoCode(err, "ENOENT")) return [];
      issues.push({ file: displayPath(path.join(dir, relative)), message: fsReason(err) });
      return [];
    }
    const fixtures: Fixture[] = [];
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (!entry.isFile() || !entry.name.endsWith(".sh")) {
        issues.push({ file: displayPath(path.join(dir, relative, entry.name)), field, message: "not a fixture: only *.sh files belong here" });
        continue;
      }
      const script = await readPart(`${relative}/${entry.name}`, field, true);
      const expectOutput = [...script.content.matchAll(FIXTURE_EXPECT_OUTPUT)].map((m) => m[1]!);
      const expectAfterReboot = [...script.content.matchAll(FIXTURE_EXPECT_AFTER_REBOOT)].map((m) => m[1]!);
      const reboot = FIXTURE_REBOOT.test(script.content);
      if (expectAfterReboot.length > 0 && !reboot) issues.push({ file: script.file, field, message: "expect-after-reboot without a `# reboot: yes` line" });
      fixtures.push({ ...script, name: entry.name.slice(0, -3), expectOutput, reboot, expectAfterReboot });
    }
    return fixtures;
  };
  const steps = await Promise.all(
    manifest.steps.map(async (step, i): Promise<LoadedStep> => {
      const base = `steps/${step.id}`;
      const field = `steps[${i}]`;
      const [text, hint, check, solution, shortcuts, alternatives] = await Promise.all([
        readPart(`${base}/${STEP_FILES.text}`, field, false),
        // An exam gives no hints (its solutions come with the result): hint.md is optional there.
        manifest.mode === "exam" ? readOptional(`${base}/${STEP_FILES.hint}`) : readPart(`${base}/${STEP_FILES.hint}`, field, false),
        readPart(`${base}/${STEP_FILES.check}`, field, true),
        readPart(`${base}/${STEP_FILES.solution}`, field, true),
        readFixtures(`${base}/${STEP_FIXTURE_DIRS.shortcuts}`, field),
        readFixtures(`${base}/${STEP_FIXTURE_DIRS.alternatives}`, field),
      ]);
      const scoring =
        manifest.mode !== "exam"
          ? undefined
          : step.checks
            ? await Promise.all(
                step.checks.map(async (c, j) => ({ ...c, script: await readPart(`${base}/check-${c.id}.sh`, `${field}.checks[${j}]`, true) })),
              )
            : [{ id: WHOLE_TASK_CHECK, title: step.title, points: step.points, script: check }];
      return { ...step, textMarkdown: text.content, hintMarkdown: hint.content, check, solution, shortcuts, alternatives, scoring };
    }),
  );
  const setup: Record<string, LabScript[]> = {};
  for (const [machine, files] of Object.entries(manifest.setup)) {
    setup[machine] = await Promise.all(files.map((f, i) => readPart(f, `setup.${machine}[${i}]`, true)));
  }
  const checkLib = manifest.checkLib ? (await readPart(manifest.checkLib, "checkLib", false)).content : "";
  if (issues.length > 0) throw new LabError(slug, issues);
  return { slug, manifest, lessonMarkdown, dir, steps, setup, checkLib };
}

/**
 * What `labs validate` reports without refusing the lab: steps about boot-time state
 * (verifyByReboot) without shortcuts/, whose check nobody proved against "true only until the
 * next boot".
 */
export function labWarnings(lab: Lab): LabIssue[] {
  return lab.steps
    .filter((step) => step.verifyByReboot && step.shortcuts.length === 0)
    .map((step) => ({
      file: displayPath(path.join(lab.dir, "steps", step.id)),
      message: `verifyByReboot step without ${STEP_FIXTURE_DIRS.shortcuts}/*.sh: add the states its check must refuse (true only until the next boot)`,
    }));
}

/** A warning or issue as one line, `file: field: message`. */
export function formatLabIssue(issue: LabIssue): string {
  return formatIssue(issue);
}

async function isExecutable(file: string): Promise<boolean> {
  return access(file, constants.X_OK).then(
    () => true,
    () => false,
  );
}

/**
 * Loads every lab directory under labsDir, sorted by slug. A broken lab never hides the others:
 * its LabError goes to `errors` and the rest still load. Directories starting with "." or "_"
 * are skipped (drafts, editor folders).
 */
export async function listLabs(labsDir: string): Promise<{ labs: Lab[]; errors: LabError[] }> {
  let entries;
  try {
    entries = await readdir(labsDir, { withFileTypes: true });
  } catch (err) {
    return { labs: [], errors: [new LabError(undefined, [{ file: displayPath(labsDir), message: fsReason(err) }])] };
  }
  const slugs = entries
    .filter((e) => e.isDirectory() && !e.name.startsWith(".") && !e.name.startsWith("_"))
    .map((e) => e.name)
    .sort();

  const results = await Promise.allSettled(slugs.map((slug) => loadLab(labsDir, slug)));
  const labs: Lab[] = [];
  const errors: LabError[] = [];
  results.forEach((result, i) => {
    if (result.status === "fulfilled") labs.push(result.value);
    else errors.push(asLabError(slugs[i], path.join(labsDir, slugs[i] ?? ""), result.reason));
  });
  return { labs, errors };
}

function parseManifest(slug: string, file: string, text: string): LabManifest {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false });
  if (doc.errors.length > 0) {
    throw new LabError(
      slug,
      doc.errors.map((e) => {
        const { line, col } = lineCounter.linePos(e.pos[0]);
        return { file: `${file}:${line}:${col}`, message: `invalid YAML: ${e.message}` };
      }),
    );
  }
  const result = LabManifest.safeParse(doc.toJS());
  if (!result.success) {
    throw new LabError(slug, result.error.issues.flatMap((issue) => zodIssueToLabIssues(file, issue)));
  }
  return result.data;
}

function zodIssueToLabIssues(file: string, issue: z.core.$ZodIssue): LabIssue[] {
  if (issue.code === "unrecognized_keys") {
    return issue.keys.map((key) => ({ file, field: formatField([...issue.path, key]), message: "unknown field" }));
  }
  return [{ file, field: formatField(issue.path) || "(top level)", message: issue.message }];
}

/** `["machines", 1, "name"]` -> `machines[1].name`. */
function formatField(fieldPath: readonly PropertyKey[]): string {
  return fieldPath
    .map((part, i) => (typeof part === "number" ? `[${part}]` : `${i === 0 ? "" : "."}${String(part)}`))
    .join("");
}

/** Reads a UTF-8 file; undefined when it does not exist, LabError for any other failure. */
async function readTextFile(slug: string, file: string): Promise<string | undefined> {
  try {
    return await readFile(file, "utf8");
  } catch (err) {
    if (isErrnoCode(err, "ENOENT")) return undefined;
    throw new LabError(slug, [{ file: displayPath(file), message: fsReason(err) }]);
  }
}

function asLabError(slug: string | undefined, dir: string, err: unknown): LabError {
  if (err instanceof LabError) return err.slug === slug ? err : new LabError(slug, err.issues);
  return new LabError(slug, [{ file: displayPath(dir), message: err instanceof Error ? err.message : String(err) }]);
}

function isErrnoCode(err: unknown, code: string): boolean {
  return err instanceof Error && (err as NodeJS.ErrnoException).code === code;
}

function fsReason(err: unknown): string {
  if (isErrnoCode(err, "ENOENT")) return "not found";
  if (isErrnoCode(err, "ENOTDIR")) return "not a directory";
  if (isErrnoCode(err, "EISDIR")) return "is a directory, expected a file";
  if (isErrnoCode(err, "EACCES")) return "permission denied";
  return err instanceof Error ? err.message : String(err);
}

/** Paths in messages are relative to the working directory (`labs/x/lab.yaml`) when beneath it. */
function displayPath(file: string): string {
  const rel = path.relative(process.cwd(), file);
  return rel !== "" && !rel.startsWith("..") && !path.isAbsolute(rel) ? rel : file;
}
