import type { Metadata } from "next";
import { notFound } from "next/navigation";
import { cache } from "react";
import { ExamWorkspace } from "@/components/exam/ExamWorkspace";
import { LabWorkspace } from "@/components/lab/LabWorkspace";
import { examTasks } from "./exam-tasks";
import { pageUser } from "@/server/compose/page";
import { LabError, labsDirFromEnv, loadLab, type Lab } from "@/server/labs/load";
import { labVersionHash, storedLabVersion } from "@/server/labs/versions";
import { getServicesOrThrow } from "@/server/compose/services";
import { LIVE_STATES } from "@/server/sessions/lifecycle";

export const dynamic = "force-dynamic";

type Props = { params: Promise<{ slug: string }> };

/**
 * The lab, or a 404 for a malformed slug, an unknown lab or broken lab content (the catalog
 * lists broken labs with their errors). Cached per request: metadata and page share one read.
 */
const loadLabOrNotFound = cache(async (slug: string): Promise<Lab> => {
  try {
    return await loadLab(labsDirFromEnv(), slug);
  } catch (err) {
    if (err instanceof LabError) notFound();
    throw err;
  }
});

/**
 * What the page shows: the lab version of the user's live session of it (a lab edit applies to
 * new sessions only), else the lab as on disk now (the version a session started now pins).
 */
async function labForUser(slug: string, userId: string): Promise<{ lab: Lab; version: string }> {
  const { db } = getServicesOrThrow();
  const live = await db.labSession.findFirst({ where: { learnerId: userId, labSlug: slug, state: { in: [...LIVE_STATES] } }, select: { labVersion: true } });
  const pinned = live?.labVersion ? await storedLabVersion(db, slug, live.labVersion) : null;
  if (pinned && live?.labVersion) return { lab: pinned, version: live.labVersion };
  const lab = await loadLabOrNotFound(slug);
  return { lab, version: labVersionHash(lab) };
}

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  const lab = await loadLabOrNotFound((await params).slug);
  return { title: `${lab.manifest.title} — Labdeck` };
}

export default async function LabPage({ params }: Props) {
  const { slug } = await params;
  const user = await pageUser(`/labs/${encodeURIComponent(slug)}`);
  const { lab, version } = await labForUser(slug, user.id);
  const workspaceLab = { slug: lab.slug, title: lab.manifest.title, machines: lab.manifest.machines, version };
  // Only what the learner may see: a task's checks, hint and solution stay on the server.
  const tasks = examTasks(lab);
  if (tasks) return <ExamWorkspace lab={workspaceLab} lessonMarkdown={lab.lessonMarkdown} tasks={tasks} />;
  return (
    <LabWorkspace
      lab={workspaceLab}
      lessonMarkdown={lab.lessonMarkdown}
      // Only what the learner may see: a step's check, hint and solution stay on the server.
      steps={lab.steps.map(({ id, title, machine, textMarkdown }) => ({ id, title, machine, textMarkdown }))}
    />
  );
}
