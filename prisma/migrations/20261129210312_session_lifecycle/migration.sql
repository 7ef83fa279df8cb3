-- CreateEnum
CREATE TYPE "SessionEndReason" AS ENUM ('learner', 'expired', 'admin');

-- AlterEnum
ALTER TYPE "LabSessionState" ADD VALUE 'suspended';

-- AlterTable
ALTER TABLE "LabSession" ADD COLUMN     "endReason" "SessionEndReason",
ADD COLUMN     "expiresAt" TIMESTAMP(3),
ADD COLUMN     "lastActivityAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP;

