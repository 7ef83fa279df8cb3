/**
 * Loaded labs by slug, re-read from disk at most every CATALOG_TTL_MS so the grader can ask for
 * a lab on every check without re-parsing files, and authors' edits still show up.
 */
import { loadLab, type Lab } from "./load";

/** How long a loaded lab is reused before its files are read again, in ms. */
const CATALOG_TTL_MS = 5_000;

export class LabCatalog {
  private readonly cache = new Map<string, { at: number; lab: Promise<Lab> }>();

  constructor(readonly labsDir: string) {}

  /** The lab, or a rejected promise with a LabError. */
  get(slug: string): Promise<Lab> {
    const hit = this.cache.get(slug);
    if (hit && Date.now() - hit.at < CATALOG_TTL_MS) return hit.lab;
    const lab = loadLab(this.labsDir, slug);
    lab.catch(() => this.cache.delete(slug));
    this.cache.set(slug, { at: Date.now(), lab });
    return lab;
  }
}
