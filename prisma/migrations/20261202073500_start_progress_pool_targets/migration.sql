-- AlterTable
ALTER TABLE "LabSession" ADD COLUMN     "startDetail" TEXT,
ADD COLUMN     "startError" TEXT,
ADD COLUMN     "startSource" TEXT,
ADD COLUMN     "startStage" TEXT;

-- CreateTable
CREATE TABLE "PoolTarget" (
    "labSlug" TEXT NOT NULL,
    "reserve" INTEGER NOT NULL DEFAULT 0,
    "initial" INTEGER NOT NULL DEFAULT 0,
    "cap" INTEGER,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "PoolTarget_pkey" PRIMARY KEY ("labSlug")
);

