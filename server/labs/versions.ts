/**
 * Lab content versions: a session runs and is graded against the lab as it was when it
 * started. A version is the loaded lab (manifest, lesson, steps with text, checks, hints and
 * solutions, setup, check helpers) keyed by the sha256 of that content, stored once in
 * `LabVersion` so every server process reads the same content after the files on disk changed,
 * and after restarts. New sessions pin the current version (`currentLabVersion`); an admin moves a
 * live session to the current one explicitly (`moveSessionToCurrentVersion`), keeping the ids of
 * passed steps that still exist.
 */
import { createHash } from "node:crypto";
import type { Db } from "../db/client";
import type { Prisma } from "../db/generated/client";
import type { Lab } from "./load";

/** What versions need of the catalog: the lab as it is on disk now. */
export interface CurrentLabs {
  get(slug: string): Promise<Lab>;
}

export interface LabVersion {
  hash: string;
  lab: Lab;
}

/** The content a version is made of: everything a session shows, runs or grades; not where it was read from. */
function versionContent(lab: Lab): Omit<Lab, "dir"> {
  return { slug: lab.slug, manifest: lab.manifest, lessonMarkdown: lab.lessonMarkdown, steps: lab.steps, setup: lab.setup, checkLib: lab.checkLib };
}

const hashes = new WeakMap<Lab, string>();

/** The version hash of a loaded lab (sha256 hex of its content); memoized per loaded object. */
export function labVersionHash(lab: Lab): string {
  let hash = hashes.get(lab);
  if (!hash) hashes.set(lab, (hash = createHash("sha256").update(JSON.stringify(versionContent(lab))).digest("hex")));
  return hash;
}

/** Versions are immutable: kept in memory once read, the newest few (each holds a lab's text). */
const CACHE_MAX = 64;
const cache = new Map<string, Lab>();
/** Versions this process has written, per database (a test may run several). */
const written = new WeakMap<Db, Set<string>>();

function remember(key: string, lab: Lab): void {
  cache.delete(key);
  cache.set(key, lab);
  while (cache.size > CACHE_MAX) cache.delete(cache.keys().next().value!);
}

/** The lab as on disk now, its version stored (once) so sessions can pin it. */
export async function currentLabVersion(db: Db, labs: CurrentLabs, slug: string): Promise<LabVersion> {
  const lab = await labs.get(slug);
  const hash = labVersionHash(lab);
  const key = `${lab.slug}\0${hash}`;
  let done = written.get(db);
  if (!done) written.set(db, (done = new Set()));
  if (!done.has(key)) {
    const content = { ...versionContent(lab), dir: lab.dir } as unknown as Prisma.InputJsonValue;
    await db.labVersion.upsert({ where: { slug_hash: { slug: lab.slug, hash } }, create: { slug: lab.slug, hash, content }, update: {} });
    done.add(key);
  }
  remember(key, lab);
  return { hash, lab };
}

/** A stored version, or null when there is no such row. */
export async function storedLabVersion(db: Db, slug: string, hash: string): Promise<Lab | null> {
  const key = `${slug}\0${hash}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const row = await db.labVersion.findUnique({ where: { slug_hash: { slug, hash } }, select: { content: true } });
  if (!row) return null;
  const lab = row.content as unknown as Lab;
  remember(key, lab);
  return lab;
}

/** The first step of `lab` not in `done` (null: every step is done). */
export function firstOpenStep(lab: Pick<Lab, "steps">, done: ReadonlySet<string>): string | null {
  return lab.steps.find((s) => !done.has(s.id))?.id ?? null;
}


/** Forgets this process's copies (tests: what a fresh process, or one after a restart, would read). */
export function clearLabVersionCache(): void {
  cache.clear();
}
