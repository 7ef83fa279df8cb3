-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateEnum
CREATE TYPE "LabSessionState" AS ENUM ('starting', 'ready', 'ended');

-- CreateTable
CREATE TABLE "LabSession" (
    "id" TEXT NOT NULL,
    "labSlug" TEXT NOT NULL,
    "learnerId" TEXT NOT NULL,
    "state" "LabSessionState" NOT NULL DEFAULT 'starting',
    "provider" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,
    "endedAt" TIMESTAMP(3),

    CONSTRAINT "LabSession_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Machine" (
    "id" TEXT NOT NULL,
    "sessionId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "host" TEXT NOT NULL,
    "port" INTEGER NOT NULL,
    "user" TEXT NOT NULL,
    "privateKey" TEXT NOT NULL,
    "hostKey" TEXT NOT NULL,
    "providerRef" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Machine_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "LabSession_learnerId_labSlug_state_idx" ON "LabSession"("learnerId", "labSlug", "state");

-- CreateIndex
CREATE UNIQUE INDEX "Machine_sessionId_name_key" ON "Machine"("sessionId", "name");

-- AddForeignKey
ALTER TABLE "Machine" ADD CONSTRAINT "Machine_sessionId_fkey" FOREIGN KEY ("sessionId") REFERENCES "LabSession"("id") ON DELETE CASCADE ON UPDATE CASCADE;


-- At most one live session per learner and lab (Prisma's schema language has no partial indexes).
CREATE UNIQUE INDEX "LabSession_live_per_learner_lab" ON "LabSession"("learnerId", "labSlug") WHERE "state" <> 'ended';
