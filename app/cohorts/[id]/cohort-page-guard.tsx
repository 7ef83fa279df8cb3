import type { ReactElement } from "react";
import { notFound } from "next/navigation";
import { getTranslations } from "next-intl/server";
import type { CurrentUser } from "@/server/auth/guard";
import { requireCohortView } from "@/server/cohorts/access";
import type { Db } from "@/server/db/client";
import { Denied } from "@/server/denied";

/**
 * The cohort pages' guard: null when `user` may see the cohort; for an instructor of an ended
 * cohort, the page that says so (403); anyone else learns nothing (404).
 */
export async function cohortPageRefusal(db: Db, user: CurrentUser, cohortId: string): Promise<ReactElement | null> {
  try {
    await requireCohortView(db, user, cohortId);
    return null;
  } catch (error) {
    if (error instanceof Denied && error.code === "cohortEnded") {
      const t = await getTranslations("revoked");
      return (
        <p className="mx-auto max-w-7xl px-6 py-6" data-testid="cohort-ended">
          {t("cohortEnded")}
        </p>
      );
    }
    if (error instanceof Denied) notFound();
    throw error;
  }
}
