-- AlterTable
ALTER TABLE "LabSession" ADD COLUMN     "checkUntil" TIMESTAMP(3),
ADD COLUMN     "gradeDueAt" TIMESTAMP(3);

