/**
 * Pre-provisioning jobs as rows: their view and queries, apart from the runner (provision.ts) so
 * pages can show progress without loading the machine and lab-setup code.
 */
import type { Db } from "../db/client";

export interface ProvisionFailure {
  learnerId: string;
  email: string;
  labSlug: string;
  /** "noCapacity" (the provider has no machines free) or "failed". */
  code: "noCapacity" | "failed";
  message: string;
}

export interface ProvisionJobView {
  id: string;
  cohortId: string;
  state: "running" | "done" | "failed";
  total: number;
  succeeded: number;
  failed: number;
  failures: ProvisionFailure[];
  createdAt: Date;
  finishedAt: Date | null;
}

export async function getProvisionJob(db: Db, id: string): Promise<ProvisionJobView | null> {
  const job = await db.provisionJob.findUnique({ where: { id } });
  return job ? toView(job) : null;
}

/** The cohort's newest job, or null. */
export async function latestProvisionJob(db: Db, cohortId: string): Promise<ProvisionJobView | null> {
  const job = await db.provisionJob.findFirst({ where: { cohortId }, orderBy: { createdAt: "desc" } });
  return job ? toView(job) : null;
}

export function toView(job: {
  id: string;
  cohortId: string;
  state: "running" | "done" | "failed";
  total: number;
  succeeded: number;
  failed: number;
  failures: unknown;
  createdAt: Date;
  finishedAt: Date | null;
}): ProvisionJobView {
  return { ...job, failures: Array.isArray(job.failures) ? (job.failures as ProvisionFailure[]) : [] };
}
