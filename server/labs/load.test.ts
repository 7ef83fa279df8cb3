import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LabError, labWarnings, listLabs, loadLab } from "./load";

let labsDir: string;

beforeEach(async () => {
  labsDir = await mkdtemp(path.join(tmpdir(), "labdeck-labs-"));
});

afterEach(async () => {
  await rm(labsDir, { recursive: true, force: true });
});

/** Writes labs/<slug>/ with the given files (name -> content). */
async function writeLab(slug: string, files: Record<string, string>): Promise<void> {
  const dir = path.join(labsDir, slug);
  await mkdir(dir, { recursive: true });
  for (const [name, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(path.join(dir, name), content);
  }
}

const validManifest = `
title: ターミナル入門
summary: 3台のマシンでコマンドを実行してみます。
durationMinutes: 10
`;

/** Runs fn and returns the LabError it throws; fails the test if it throws anything else. */
async function labErrorOf(fn: () => Promise<unknown>): Promise<LabError> {
  const err = await fn().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(LabError);
  return err as LabError;
}

describe("loadLab", () => {
  it("loads a valid lab and fills defaults", async () => {
    await writeLab("hello", { "lab.yaml": validManifest, "lesson.md": "# こんにちは\n" });

    const lab = await loadLab(labsDir, "hello");

    expect(lab.slug).toBe("hello");
    expect(lab.dir).toBe(path.join(labsDir, "hello"));
    expect(lab.lessonMarkdown).toBe("# こんにちは\n");
    expect(lab.manifest).toEqual({
      title: "ターミナル入門",
      summary: "3台のマシンでコマンドを実行してみます。",
      durationMinutes: 10,
      image: "debian-base",
      machines: ["controlplane", "node01", "node02"],
      lesson: "lesson.md",
      mode: "lab",
      changesMachine: false,
      openToAll: false,
      network: { internet: false },
      steps: [],
      setup: {},
    });
  });

  it("reads the lesson file the manifest names", async () => {
    await writeLab("custom", {
      "lab.yaml": `${validManifest}machines: [cp]\nlesson: text/intro.md\n`,
      "text/intro.md": "intro",
    });

    const lab = await loadLab(labsDir, "custom");

    expect(lab.manifest.machines).toEqual(["cp"]);
    expect(lab.lessonMarkdown).toBe("intro");
  });

  it("reads network.internet and refuses anything but a boolean or an unknown network key", async () => {
    await writeLab("net", { "lab.yaml": `${validManifest}network:\n  internet: true\n`, "lesson.md": "" });
    expect((await loadLab(labsDir, "net")).manifest.network).toEqual({ internet: true });

    await writeLab("x", { "lab.yaml": `${validManifest}network:\n  internet: yes please\n  ports: [80]\n`, "lesson.md": "" });
    const err = await labErrorOf(() => loadLab(labsDir, "x"));
    expect(err.issues.map((i) => i.field).sort()).toEqual(["network.internet", "network.ports"]);
  });

  it("rejects an unknown key, naming the file and the field", async () => {
    await writeLab("x", { "lab.yaml": `${validManifest}duration: 10\n`, "lesson.md": "" });

    const err = await labErrorOf(() => loadLab(labsDir, "x"));

    expect(err.message).toMatch(/x\/lab\.yaml: duration: unknown field/);
    expect(err.slug).toBe("x");
  });

  it("rejects a duplicate machine at its index", async () => {
    await writeLab("x", {
      "lab.yaml": `${validManifest}machines: [controlplane, node01, node01]\n`,
      "lesson.md": "",
    });

    const err = await labErrorOf(() => loadLab(labsDir, "x"));

    expect(err.message).toMatch(/x\/lab\.yaml: machines\[2\]: duplicate machine "node01"/);
  });

  it("reports every invalid field, one line each", async () => {
    await writeLab("x", {
      "lab.yaml": "title: t\ndurationMinutes: 0\nmachines: [Node01]\n",
      "lesson.md": "",
    });

    const err = await labErrorOf(() => loadLab(labsDir, "x"));

    expect(err.issues.map((i) => i.field)).toEqual(["summary", "durationMinutes", "machines[0]"]);
    expect(err.message.split("\n")).toHaveLength(3);
  });

  it("rejects a lesson path that leaves the lab directory", async () => {
    await writeLab("x", { "lab.yaml": `${validManifest}lesson: ../other/lesson.md\n` });

    const err = await labErrorOf(() => loadLab(labsDir, "x"));

    expect(err.message).toMatch(/x\/lab\.yaml: lesson: must stay inside the lab directory/);
  });

  it("reports a missing lesson file by name", async () => {
    await writeLab("x", { "lab.yaml": `${validManifest}lesson: intro.md\n` });

    const err = await labErrorOf(() => loadLab(labsDir, "x"));

    expect(err.message).toMatch(/x\/lab\.yaml: lesson: lesson file not found: .*x\/intro\.md/);
  });

  it("reports a missing manifest", async () => {
    await writeLab("x", { "lesson.md": "" });

    const err = await labErrorOf(() => loadLab(labsDir, "x"));

    expect(err.message).toMatch(/x\/lab\.yaml: file not found/);
  });

  it("reports YAML syntax errors with a line number", async () => {
    await writeLab("x", { "lab.yaml": "title: [unclosed\nsummary: s\n", "lesson.md": "" });

    const err = await labErrorOf(() => loadLab(labsDir, "x"));

    expect(err.message).toMatch(/x\/lab\.yaml:\d+:\d+: invalid YAML/);
  });

  it.each(["../etc", "..", "a/b", "Hello", "-x", "", "x".repeat(64), "a\u0000"])(
    "rejects slug %j before touching the disk",
    async (slug) => {
      // A labs dir that does not exist: any disk access would report "not found" instead.
      const err = await labErrorOf(() => loadLab(path.join(labsDir, "missing"), slug));

      expect(err.message).toMatch(/^invalid lab slug/);
      expect(err.slug).toBeUndefined();
    },
  );
});

describe("listLabs", () => {
  it("keeps the good labs when one is broken, sorted by slug", async () => {
    await writeLab("b-good", { "lab.yaml": validManifest, "lesson.md": "b" });
    await writeLab("a-good", { "lab.yaml": validManifest, "lesson.md": "a" });
    await writeLab("broken", { "lab.yaml": `${validManifest}machines: [a, a]\n`, "lesson.md": "" });
    await writeLab(".git", { config: "" });

    const { labs, errors } = await listLabs(labsDir);

    expect(labs.map((l) => l.slug)).toEqual(["a-good", "b-good"]);
    expect(errors).toHaveLength(1);
    expect(errors[0]?.slug).toBe("broken");
    expect(errors[0]?.message).toMatch(/broken\/lab\.yaml: machines\[1\]: duplicate machine "a"/);
  });

  it("reports a directory whose name is not a valid slug", async () => {
    await writeLab("Bad_Name", { "lab.yaml": validManifest, "lesson.md": "" });

    const { labs, errors } = await listLabs(labsDir);

    expect(labs).toEqual([]);
    expect(errors[0]?.slug).toBe("Bad_Name");
    expect(errors[0]?.message).toMatch(/invalid lab slug "Bad_Name"/);
  });

  it("returns an error instead of throwing when the labs directory is missing", async () => {
    const { labs, errors } = await listLabs(path.join(labsDir, "missing"));

    expect(labs).toEqual([]);
    expect(errors[0]?.message).toMatch(/missing: not found/);
  });

  it("loads every lab in the repository's labs/ directory", async () => {
    const { labs, errors } = await listLabs(path.resolve("labs"));

    expect(errors.map((e) => e.message)).toEqual([]);
    expect(labs.map((l) => l.slug)).toEqual(expect.arrayContaining(["hello-terminal", "preinstall-checks"]));
  });

  it("learners' texts (lesson, steps, hints) do not mention the authors' tools", async () => {
    const { labs } = await listLabs(path.resolve("labs"));
    const texts = labs.flatMap((l) => [
      { where: `${l.slug}: lesson`, text: l.lessonMarkdown },
      ...l.steps.flatMap((s) => [
        { where: `${l.slug}/${s.id}: step`, text: s.textMarkdown },
        { where: `${l.slug}/${s.id}: hint`, text: s.hintMarkdown ?? "" },
      ]),
    ]);
    expect(texts.filter((t) => /\blabs (test|validate)\b|labdeck labs/.test(t.text)).map((t) => t.where)).toEqual([]);
  });
});

describe("lab steps", () => {
  const stepManifest = (steps: string, extra = "") => `${validManifest}steps:\n${steps}${extra}`;
  const stepFiles = (id: string) => ({
    [`steps/${id}/step.md`]: "do it\n",
    [`steps/${id}/hint.md`]: "like this\n",
    [`steps/${id}/check.sh`]: "#!/bin/bash\ntrue\n",
    [`steps/${id}/solution.sh`]: "#!/bin/bash\ntrue\n",
  });
  async function makeExecutable(slug: string, id: string) {
    for (const f of ["check.sh", "solution.sh"]) await chmod(path.join(labsDir, slug, "steps", id, f), 0o755);
  }

  it("loads steps with their files and defaults", async () => {
    await writeLab("ok", { "lab.yaml": stepManifest("  - { id: one, title: 一, machine: node01 }\n"), "lesson.md": "#\n", ...stepFiles("one") });
    await makeExecutable("ok", "one");
    const lab = await loadLab(labsDir, "ok");
    expect(lab.steps).toHaveLength(1);
    expect(lab.steps[0]).toMatchObject({ id: "one", machine: "node01", timeoutSeconds: 15, verifyByReboot: false, textMarkdown: "do it\n" });
    expect(lab.steps[0]!.check.content).toContain("true");
  });

  it("reads shortcuts/ and alternatives/ fixtures sorted by name, with their expect-output, reboot and expect-after-reboot lines; warns for a verifyByReboot step without shortcuts", async () => {
    await writeLab("fx", {
      "lab.yaml": stepManifest("  - { id: one, title: 一, machine: node01, verifyByReboot: true }\n  - { id: two, title: 二, machine: node01, verifyByReboot: true }\n"),
      "lesson.md": "#\n",
      ...stepFiles("one"),
      ...stepFiles("two"),
      "steps/one/shortcuts/b-runtime.sh": "#!/bin/bash\n# reboot: yes\n# expect-output: 再起動後:\n#  expect-output:  /run/x  \n# expect-after-reboot: 今:\ntrue\n",
      "steps/one/shortcuts/a-now.sh": "#!/bin/bash\ntrue\n",
      "steps/one/alternatives/other.sh": "#!/bin/bash\ntrue\n",
    });
    for (const id of ["one", "two"]) await makeExecutable("fx", id);
    for (const f of ["shortcuts/b-runtime.sh", "shortcuts/a-now.sh", "alternatives/other.sh"]) await chmod(path.join(labsDir, "fx/steps/one", f), 0o755);
    const lab = await loadLab(labsDir, "fx");
    const [one, two] = lab.steps;
    expect(one!.shortcuts.map((f) => [f.name, f.expectOutput, f.reboot, f.expectAfterReboot])).toEqual([
      ["a-now", [], false, []],
      ["b-runtime", ["再起動後:", "/run/x"], true, ["今:"]],
    ]);
    expect(one!.alternatives.map((f) => f.file)).toEqual([expect.stringMatching(/steps\/one\/alternatives\/other\.sh$/)]);
    expect(two!.shortcuts).toEqual([]);
    expect(labWarnings(lab).map((w) => [w.file, w.message])).toEqual([[expect.stringMatching(/steps\/two$/), expect.stringMatching(/verifyByReboot step without shortcuts/)]]);
  });

  it("refuses a fixture that is not an executable *.sh", async () => {
    await writeLab("badfx", {
      "lab.yaml": stepManifest("  - { id: one, title: 一, machine: node01 }\n"),
      "lesson.md": "#\n",
      ...stepFiles("one"),
      "steps/one/shortcuts/typo.bash": "#!/bin/bash\ntrue\n",
      "steps/one/alternatives/noexec.sh": "#!/bin/bash\ntrue\n",
    });
    await makeExecutable("badfx", "one");
    const err = await labErrorOf(() => loadLab(labsDir, "badfx"));
    expect(err.message).toMatch(/steps\/one\/shortcuts\/typo\.bash: steps\[0\]: not a fixture: only \*\.sh files belong here/);
    expect(err.message).toMatch(/steps\/one\/alternatives\/noexec\.sh: not executable/);
  });

  it("names a missing check file", async () => {
    const files: Record<string, string> = { "lab.yaml": stepManifest("  - { id: one, title: 一, machine: node01 }\n"), "lesson.md": "#\n", ...stepFiles("one") };
    delete files["steps/one/check.sh"];
    await writeLab("nocheck", files);
    await chmod(path.join(labsDir, "nocheck/steps/one/solution.sh"), 0o755);
    const err = await labErrorOf(() => loadLab(labsDir, "nocheck"));
    expect(err.message).toMatch(/lab\.yaml: steps\[0\]: file not found: .*steps\/one\/check\.sh/);
  });

  it("rejects a step on an unknown machine", async () => {
    await writeLab("badmachine", { "lab.yaml": stepManifest("  - { id: one, title: 一, machine: node09 }\n"), "lesson.md": "#\n", ...stepFiles("one") });
    await makeExecutable("badmachine", "one");
    const err = await labErrorOf(() => loadLab(labsDir, "badmachine"));
    expect(err.message).toMatch(/steps\[0\]\.machine: unknown machine "node09"/);
  });

  it("rejects duplicate step ids", async () => {
    await writeLab("dup", {
      "lab.yaml": stepManifest("  - { id: one, title: 一, machine: node01 }\n  - { id: one, title: 二, machine: node02 }\n"),
      "lesson.md": "#\n",
      ...stepFiles("one"),
    });
    const err = await labErrorOf(() => loadLab(labsDir, "dup"));
    expect(err.message).toMatch(/steps\[1\]\.id: duplicate step id "one"/);
  });

  it("rejects a script that is not executable", async () => {
    await writeLab("noexec", { "lab.yaml": stepManifest("  - { id: one, title: 一, machine: node01 }\n"), "lesson.md": "#\n", ...stepFiles("one") });
    const err = await labErrorOf(() => loadLab(labsDir, "noexec"));
    expect(err.message).toMatch(/steps\/one\/check\.sh: not executable/);
    expect(err.message).toMatch(/steps\/one\/solution\.sh: not executable/);
  });

  it("rejects setup for an unknown machine and a step timeout out of bounds", async () => {
    await writeLab("badsetup", {
      "lab.yaml": stepManifest("  - { id: one, title: 一, machine: node01, timeoutSeconds: 9999 }\n", "setup:\n  nodeX: [setup/x.sh]\n"),
      "lesson.md": "#\n",
      ...stepFiles("one"),
    });
    const err = await labErrorOf(() => loadLab(labsDir, "badsetup"));
    expect(err.message).toMatch(/steps\[0\]\.timeoutSeconds/);
  });
});

describe("exams in lab.yaml (mode: exam)", () => {
  const exam = (steps: string, head = "mode: exam\nexam: { durationMinutes: 30 }\n") => `${validManifest}${head}steps:\n${steps}`;
  const files = (id: string, extra: Record<string, string> = {}) => ({
    [`steps/${id}/step.md`]: "do it\n",
    [`steps/${id}/check.sh`]: "#!/bin/bash\ntrue\n",
    [`steps/${id}/solution.sh`]: "#!/bin/bash\ntrue\n",
    ...extra,
  });
  async function executable(slug: string, paths: string[]) {
    for (const p of paths) await chmod(path.join(labsDir, slug, p), 0o755);
  }

  it("loads tasks with points and weighted checks (check-<id>.sh), no hint.md needed; the pass mark defaults to 66 %", async () => {
    await writeLab("ex", {
      "lab.yaml": exam(
        "  - { id: one, title: 一, machine: node01, points: 10, checks: [{ id: a, title: A, points: 4 }, { id: b, title: B, points: 6 }] }\n  - { id: two, title: 二, machine: node02, points: 5, verifyByReboot: true }\n",
      ),
      "lesson.md": "#\n",
      ...files("one", { "steps/one/check-a.sh": "#!/bin/bash\necho a\n", "steps/one/check-b.sh": "#!/bin/bash\necho b\n" }),
      ...files("two"),
    });
    await executable("ex", ["steps/one/check.sh", "steps/one/solution.sh", "steps/one/check-a.sh", "steps/one/check-b.sh", "steps/two/check.sh", "steps/two/solution.sh"]);
    const lab = await loadLab(labsDir, "ex");
    expect(lab.manifest.exam).toEqual({ durationMinutes: 30, passPercent: 66 });
    expect(lab.steps[0]!.scoring!.map((c) => [c.id, c.points, c.script.content.trim().split("\n")[1]])).toEqual([
      ["a", 4, "echo a"],
      ["b", 6, "echo b"],
    ]);
    expect(lab.steps[1]!.scoring!.map((c) => [c.id, c.points])).toEqual([["check", 5]]);
    expect(lab.steps[1]!.hintMarkdown).toBe("");
  });

  it("refuses checks whose points do not add up to the task's, a duplicate check id, a missing check file, and exam fields in a lab", async () => {
    await writeLab("exbad", {
      "lab.yaml": exam("  - { id: one, title: 一, machine: node01, points: 10, checks: [{ id: a, title: A, points: 4 }, { id: a, title: B, points: 4 }] }\n"),
      "lesson.md": "#\n",
      ...files("one"),
    });
    const err = await labErrorOf(() => loadLab(labsDir, "exbad"));
    expect(err.message).toMatch(/steps\[0\]\.checks: the checks' points add up to 8, the task is worth 10/);
    expect(err.message).toMatch(/steps\[0\]\.checks\[1\]\.id: duplicate check id "a"/);
    await writeLab("exmissing", {
      "lab.yaml": exam("  - { id: one, title: 一, machine: node01, points: 4, checks: [{ id: a, title: A, points: 4 }] }\n"),
      "lesson.md": "#\n",
      ...files("one"),
    });
    await executable("exmissing", ["steps/one/check.sh", "steps/one/solution.sh"]);
    expect((await labErrorOf(() => loadLab(labsDir, "exmissing"))).message).toMatch(/steps\[0\]\.checks\[0\]: file not found: .*check-a\.sh/);
    await writeLab("notexam", { "lab.yaml": exam("  - { id: one, title: 一, machine: node01 }\n", "exam: { durationMinutes: 30 }\n"), "lesson.md": "#\n" });
    expect((await labErrorOf(() => loadLab(labsDir, "notexam"))).message).toMatch(/exam: only for mode: exam/);
    await writeLab("notime", { "lab.yaml": exam("  - { id: one, title: 一, machine: node01 }\n", "mode: exam\n"), "lesson.md": "#\n" });
    expect((await labErrorOf(() => loadLab(labsDir, "notime"))).message).toMatch(/an exam needs exam:/);
  });
});

describe("image variants in lab.yaml", () => {
  it("rejects an unknown image variant, naming the file, the field and the known variants", async () => {
    await writeLab("img", { "lab.yaml": `${validManifest}image: k8s-v9\n`, "lesson.md": "" });

    const err = await labErrorOf(() => loadLab(labsDir, "img"));

    expect(err.issues).toEqual([
      {
        file: path.join(labsDir, "img", "lab.yaml"),
        field: "image",
        message: 'unknown image variant "k8s-v9" (known: debian-base, k8s-v1.31, kubespray-v2.26.0; server/machines/images/recipe.ts)',
      },
    ]);
  });

  it("accepts every registered variant", async () => {
    for (const image of ["debian-base", "k8s-v1.31", "kubespray-v2.26.0"]) {
      await writeLab(`v-${image.replace(/\./g, "")}`, { "lab.yaml": `${validManifest}image: ${image}\n`, "lesson.md": "" });
      expect((await loadLab(labsDir, `v-${image.replace(/\./g, "")}`)).manifest.image).toBe(image);
    }
  });
});
