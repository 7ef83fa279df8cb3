-- CreateEnum
CREATE TYPE "CheckOutcome" AS ENUM ('pass', 'fail', 'timeout', 'unreachable', 'error');

-- CreateEnum
CREATE TYPE "CheckTrigger" AS ENUM ('poll', 'manual');

-- AlterTable
ALTER TABLE "LabSession" ADD COLUMN     "completedAt" TIMESTAMP(3),
ADD COLUMN     "currentStep" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "currentStepSince" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP;

-- CreateTable
CREATE TABLE "CheckRun" (
    "id" TEXT NOT NULL,
    "sessionId" TEXT NOT NULL,
    "stepId" TEXT NOT NULL,
    "machine" TEXT NOT NULL,
    "trigger" "CheckTrigger" NOT NULL,
    "outcome" "CheckOutcome" NOT NULL,
    "exitCode" INTEGER,
    "output" TEXT NOT NULL,
    "durationMs" INTEGER NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "CheckRun_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "StepCompletion" (
    "id" TEXT NOT NULL,
    "sessionId" TEXT NOT NULL,
    "stepId" TEXT NOT NULL,
    "stepIndex" INTEGER NOT NULL,
    "completedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "StepCompletion_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "HintReveal" (
    "id" TEXT NOT NULL,
    "sessionId" TEXT NOT NULL,
    "stepId" TEXT NOT NULL,
    "revealedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "HintReveal_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "CheckRun_sessionId_createdAt_idx" ON "CheckRun"("sessionId", "createdAt");

-- CreateIndex
CREATE UNIQUE INDEX "StepCompletion_sessionId_stepId_key" ON "StepCompletion"("sessionId", "stepId");

-- CreateIndex
CREATE UNIQUE INDEX "HintReveal_sessionId_stepId_key" ON "HintReveal"("sessionId", "stepId");

-- AddForeignKey
ALTER TABLE "CheckRun" ADD CONSTRAINT "CheckRun_sessionId_fkey" FOREIGN KEY ("sessionId") REFERENCES "LabSession"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "StepCompletion" ADD CONSTRAINT "StepCompletion_sessionId_fkey" FOREIGN KEY ("sessionId") REFERENCES "LabSession"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "HintReveal" ADD CONSTRAINT "HintReveal_sessionId_fkey" FOREIGN KEY ("sessionId") REFERENCES "LabSession"("id") ON DELETE CASCADE ON UPDATE CASCADE;

