-- AlterTable
ALTER TABLE "LabSession" ADD COLUMN     "cohortId" TEXT;

-- Live sessions get the cohort their limits came from when they started: the newest live cohort
-- in which the learner learns the lab (server/cohorts/cohorts.ts cohortLimitsFor).
UPDATE "LabSession" s SET "cohortId" = (
  SELECT c."id" FROM "Cohort" c
  JOIN "CohortMember" m ON m."cohortId" = c."id" AND m."userId" = s."learnerId" AND m."role" = 'learner'
  WHERE c."endedAt" IS NULL AND s."labSlug" = ANY (c."labs")
  ORDER BY c."createdAt" DESC
  LIMIT 1
)
WHERE s."state" <> 'ended';

-- CreateIndex
CREATE INDEX "LabSession_cohortId_state_idx" ON "LabSession"("cohortId", "state");

-- AddForeignKey
ALTER TABLE "LabSession" ADD CONSTRAINT "LabSession_cohortId_fkey" FOREIGN KEY ("cohortId") REFERENCES "Cohort"("id") ON DELETE SET NULL ON UPDATE CASCADE;
