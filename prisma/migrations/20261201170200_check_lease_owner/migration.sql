-- AlterTable
ALTER TABLE "LabSession" ADD COLUMN     "checkBy" TEXT;

-- CreateIndex
CREATE INDEX "LabSession_state_gradeDueAt_idx" ON "LabSession"("state", "gradeDueAt");
