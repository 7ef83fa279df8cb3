-- CreateEnum
CREATE TYPE "ExamState" AS ENUM ('starting', 'running', 'scoring', 'scored');

-- CreateEnum
CREATE TYPE "ExamSubmitReason" AS ENUM ('learner', 'time');

-- CreateEnum
CREATE TYPE "ExamPhase" AS ENUM ('now', 'afterReboot');

-- AlterTable
ALTER TABLE "LabSession" ADD COLUMN     "gradedAtEnd" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "inputClosedAt" TIMESTAMP(3);

-- AlterTable
ALTER TABLE "Cohort" ADD COLUMN     "examAttempts" INTEGER NOT NULL DEFAULT 1,
ADD COLUMN     "examMinutes" INTEGER;

-- CreateTable
CREATE TABLE "ExamAttempt" (
    "id" TEXT NOT NULL,
    "sessionId" TEXT NOT NULL,
    "learnerId" TEXT NOT NULL,
    "labSlug" TEXT NOT NULL,
    "state" "ExamState" NOT NULL DEFAULT 'starting',
    "durationMinutes" INTEGER NOT NULL,
    "passPercent" INTEGER NOT NULL,
    "startedAt" TIMESTAMP(3),
    "deadline" TIMESTAMP(3),
    "submittedAt" TIMESTAMP(3),
    "submittedBy" "ExamSubmitReason",
    "marks" JSONB NOT NULL DEFAULT '{}',
    "currentTaskId" TEXT,
    "leaseUntil" TIMESTAMP(3),
    "leaseBy" TEXT,
    "bootsBefore" JSONB NOT NULL DEFAULT '{}',
    "score" INTEGER,
    "maxScore" INTEGER,
    "passed" BOOLEAN,
    "scoredAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ExamAttempt_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ExamCheckResult" (
    "id" TEXT NOT NULL,
    "attemptId" TEXT NOT NULL,
    "taskId" TEXT NOT NULL,
    "checkId" TEXT NOT NULL,
    "phase" "ExamPhase" NOT NULL,
    "machine" TEXT NOT NULL,
    "outcome" "CheckOutcome" NOT NULL,
    "output" TEXT NOT NULL,
    "durationMs" INTEGER NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ExamCheckResult_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ExamTaskSwitch" (
    "id" TEXT NOT NULL,
    "attemptId" TEXT NOT NULL,
    "taskId" TEXT NOT NULL,
    "at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ExamTaskSwitch_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "ExamAttempt_sessionId_key" ON "ExamAttempt"("sessionId");

-- CreateIndex
CREATE INDEX "ExamAttempt_state_deadline_idx" ON "ExamAttempt"("state", "deadline");

-- CreateIndex
CREATE INDEX "ExamAttempt_state_leaseUntil_idx" ON "ExamAttempt"("state", "leaseUntil");

-- CreateIndex
CREATE INDEX "ExamAttempt_learnerId_labSlug_idx" ON "ExamAttempt"("learnerId", "labSlug");

-- CreateIndex
CREATE UNIQUE INDEX "ExamCheckResult_attemptId_taskId_checkId_phase_key" ON "ExamCheckResult"("attemptId", "taskId", "checkId", "phase");

-- CreateIndex
CREATE INDEX "ExamTaskSwitch_attemptId_at_idx" ON "ExamTaskSwitch"("attemptId", "at");

-- AddForeignKey
ALTER TABLE "ExamAttempt" ADD CONSTRAINT "ExamAttempt_sessionId_fkey" FOREIGN KEY ("sessionId") REFERENCES "LabSession"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ExamCheckResult" ADD CONSTRAINT "ExamCheckResult_attemptId_fkey" FOREIGN KEY ("attemptId") REFERENCES "ExamAttempt"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ExamTaskSwitch" ADD CONSTRAINT "ExamTaskSwitch_attemptId_fkey" FOREIGN KEY ("attemptId") REFERENCES "ExamAttempt"("id") ON DELETE CASCADE ON UPDATE CASCADE;

