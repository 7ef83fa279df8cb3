-- CreateTable
CREATE TABLE "HostGroupClaim" (
    "groupId" TEXT NOT NULL,
    "sessionId" TEXT NOT NULL,
    "claimedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "HostGroupClaim_pkey" PRIMARY KEY ("groupId")
);

-- CreateIndex
CREATE INDEX "HostGroupClaim_sessionId_idx" ON "HostGroupClaim"("sessionId");

