{"level":30,"time":1795986200027,"pid":29969,"hostname":"vm","clusterDir":"/tmp/labdeck-tmpdb-8SgSKm/postgres","msg":"initialising embedded PostgreSQL cluster"}
{"level":30,"time":1795986206042,"pid":29969,"hostname":"vm","port":40259,"msg":"embedded PostgreSQL ready"}
-- CreateEnum
CREATE TYPE "SessionEndReason" AS ENUM ('learner', 'expired', 'admin');

-- AlterEnum
ALTER TYPE "LabSessionState" ADD VALUE 'suspended';

-- AlterTable
ALTER TABLE "LabSession" ADD COLUMN     "endReason" "SessionEndReason",
ADD COLUMN     "expiresAt" TIMESTAMP(3),
ADD COLUMN     "lastActivityAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP;

