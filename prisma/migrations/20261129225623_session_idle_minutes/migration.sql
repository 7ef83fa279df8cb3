-- AlterTable
ALTER TABLE "LabSession" ADD COLUMN     "idleMinutes" INTEGER;

