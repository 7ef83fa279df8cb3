import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LabError, listLabs, loadLab } from "./load";

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
});
