-- DropIndex
DROP INDEX "CheckRun_sessionId_createdAt_idx";

-- AlterTable
ALTER TABLE "CheckRun" ADD COLUMN     "count" INTEGER NOT NULL DEFAULT 1,
ADD COLUMN     "lastAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
ADD COLUMN     "minGapMs" INTEGER;

-- Existing rows: each was one run, recorded at createdAt.
UPDATE "CheckRun" SET "lastAt" = "createdAt";

-- CreateIndex
CREATE INDEX "CheckRun_sessionId_lastAt_idx" ON "CheckRun"("sessionId", "lastAt");

-- CreateIndex
CREATE INDEX "CheckRun_sessionId_stepId_lastAt_idx" ON "CheckRun"("sessionId", "stepId", "lastAt");

-- CreateIndex
CREATE INDEX "CheckRun_lastAt_idx" ON "CheckRun"("lastAt");
