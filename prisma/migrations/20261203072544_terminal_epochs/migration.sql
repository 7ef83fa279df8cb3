-- CreateTable
CREATE TABLE "TerminalEpoch" (
    "sessionId" TEXT NOT NULL,
    "terminal" TEXT NOT NULL,
    "epoch" TEXT NOT NULL,
    "base" BIGINT NOT NULL,
    "end" BIGINT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "TerminalEpoch_pkey" PRIMARY KEY ("sessionId","terminal","epoch")
);

-- AddForeignKey
ALTER TABLE "TerminalEpoch" ADD CONSTRAINT "TerminalEpoch_sessionId_fkey" FOREIGN KEY ("sessionId") REFERENCES "LabSession"("id") ON DELETE CASCADE ON UPDATE CASCADE;

