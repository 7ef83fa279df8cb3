-- CreateTable
CREATE TABLE "WatchPresence" (
    "sessionId" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "processId" TEXT NOT NULL,
    "viewers" INTEGER NOT NULL,
    "seenAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "WatchPresence_pkey" PRIMARY KEY ("sessionId","userId","processId")
);

-- CreateIndex
CREATE INDEX "WatchPresence_seenAt_idx" ON "WatchPresence"("seenAt");

