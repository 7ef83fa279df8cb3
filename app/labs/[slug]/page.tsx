import type { Metadata } from "next";
import { notFound } from "next/navigation";
import { cache } from "react";
import { LabWorkspace } from "@/components/lab/LabWorkspace";
import { pageUser } from "@/server/auth/page";
import { LabError, labsDirFromEnv, loadLab, type Lab } from "@/server/labs/load";

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

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  const lab = await loadLabOrNotFound((await params).slug);
  return { title: `${lab.manifest.title} — Labdeck` };
}

export default async function LabPage({ params }: Props) {
  const { slug } = await params;
  await pageUser(`/labs/${encodeURIComponent(slug)}`);
  const lab = await loadLabOrNotFound(slug);
  return (
    <LabWorkspace
      lab={{ slug: lab.slug, title: lab.manifest.title, machines: lab.manifest.machines }}
      lessonMarkdown={lab.lessonMarkdown}
      // Only what the learner may see: a step's check, hint and solution stay on the server.
      steps={lab.steps.map(({ id, title, machine, textMarkdown }) => ({ id, title, machine, textMarkdown }))}
    />
  );
}
