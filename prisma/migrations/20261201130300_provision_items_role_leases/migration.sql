-- CreateEnum
CREATE TYPE "ProvisionItemState" AS ENUM ('pending', 'done', 'failed');

-- AlterTable
ALTER TABLE "ProvisionJob" ADD COLUMN     "holder" TEXT,
ADD COLUMN     "leaseUntil" TIMESTAMP(3);

-- CreateTable
CREATE TABLE "ProvisionItem" (
    "id" TEXT NOT NULL,
    "jobId" TEXT NOT NULL,
    "learnerId" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "labSlug" TEXT NOT NULL,
    "position" INTEGER NOT NULL,
    "state" "ProvisionItemState" NOT NULL DEFAULT 'pending',
    "code" TEXT,
    "message" TEXT,
    "finishedAt" TIMESTAMP(3),

    CONSTRAINT "ProvisionItem_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "RoleLease" (
    "name" TEXT NOT NULL,
    "holder" TEXT NOT NULL,
    "leaseUntil" TIMESTAMP(3) NOT NULL,
    "heldSince" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "RoleLease_pkey" PRIMARY KEY ("name")
);

-- CreateIndex
CREATE INDEX "ProvisionItem_jobId_state_position_idx" ON "ProvisionItem"("jobId", "state", "position");

-- CreateIndex
CREATE UNIQUE INDEX "ProvisionItem_jobId_learnerId_labSlug_key" ON "ProvisionItem"("jobId", "learnerId", "labSlug");

-- CreateIndex
CREATE INDEX "ProvisionJob_state_leaseUntil_idx" ON "ProvisionJob"("state", "leaseUntil");

-- AddForeignKey
ALTER TABLE "ProvisionItem" ADD CONSTRAINT "ProvisionItem_jobId_fkey" FOREIGN KEY ("jobId") REFERENCES "ProvisionJob"("id") ON DELETE CASCADE ON UPDATE CASCADE;


-- Jobs left running by a version without items cannot be resumed: failed, as that version did.
UPDATE "ProvisionJob" SET "state" = 'failed', "finishedAt" = CURRENT_TIMESTAMP WHERE "state" = 'running';
