-- AlterEnum
ALTER TYPE "LabSessionState" ADD VALUE 'ending';

-- AlterEnum
ALTER TYPE "SessionEndReason" ADD VALUE 'failed';

-- AlterTable
ALTER TABLE "LabSession" ADD COLUMN     "leaseUntil" TIMESTAMP(3),
ADD COLUMN     "readyAt" TIMESTAMP(3);


-- Sessions that were ever ready before this migration.
UPDATE "LabSession" SET "readyAt" = "createdAt" WHERE "state" IN ('ready', 'suspended', 'ended');
