-- AlterTable
ALTER TABLE "HostGroupClaim" ADD COLUMN     "resetAttempts" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "resetDueAt" TIMESTAMP(3),
ADD COLUMN     "resetError" TEXT;
