-- Reboot proof: a verifyByReboot step passed on this boot of its machine, waiting for a pass on a new one.
ALTER TABLE "LabSession" ADD COLUMN "proofStepId" TEXT;
ALTER TABLE "LabSession" ADD COLUMN "proofBootId" TEXT;
ALTER TABLE "LabSession" ADD COLUMN "proofPassedAt" TIMESTAMP(3);
