-- CreateTable
CREATE TABLE "TerminalTab" (
    "id" TEXT NOT NULL,
    "sessionId" TEXT NOT NULL,
    "machine" TEXT NOT NULL,
    "number" INTEGER NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "closedAt" TIMESTAMP(3),

    CONSTRAINT "TerminalTab_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "TerminalTab_sessionId_machine_number_key" ON "TerminalTab"("sessionId", "machine", "number");

-- AddForeignKey
ALTER TABLE "TerminalTab" ADD CONSTRAINT "TerminalTab_sessionId_fkey" FOREIGN KEY ("sessionId") REFERENCES "LabSession"("id") ON DELETE CASCADE ON UPDATE CASCADE;

