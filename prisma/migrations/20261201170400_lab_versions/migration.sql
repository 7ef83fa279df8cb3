-- Progress by step id, lab content pinned per session (issue 14 item 5).
-- Data: "currentStep" (an index) is dropped here. Every passed step already has its StepCompletion
-- row by step id (written in the same transaction as the index moved), so the start-up backfill
-- (server/sessions/lab-versions.ts backfillLabVersions) pins each old session to the current lab and sets
-- "currentStepId" to the first step of it not completed (SQL cannot: the step order is on disk).

-- AlterTable
ALTER TABLE "LabSession" DROP COLUMN "currentStep",
ADD COLUMN     "currentStepId" TEXT,
ADD COLUMN     "labVersion" TEXT;

-- AlterTable
ALTER TABLE "StepCompletion" DROP COLUMN "stepIndex";

-- CreateTable
CREATE TABLE "LabVersion" (
    "slug" TEXT NOT NULL,
    "hash" TEXT NOT NULL,
    "content" JSONB NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "LabVersion_pkey" PRIMARY KEY ("slug","hash")
);

-- AddForeignKey
ALTER TABLE "LabSession" ADD CONSTRAINT "LabSession_labSlug_labVersion_fkey" FOREIGN KEY ("labSlug", "labVersion") REFERENCES "LabVersion"("slug", "hash") ON DELETE RESTRICT ON UPDATE CASCADE;

