-- CreateTable
CREATE TABLE "TerminalRecording" (
    "id" TEXT NOT NULL,
    "sessionId" TEXT NOT NULL,
    "machine" TEXT NOT NULL,
    "startedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "bootId" TEXT NOT NULL,
    "holderEnd" BIGINT NOT NULL,
    "bytes" INTEGER NOT NULL DEFAULT 0,
    "truncated" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "TerminalRecording_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "RecordingChunk" (
    "id" BIGSERIAL NOT NULL,
    "recordingId" TEXT NOT NULL,
    "offset" INTEGER NOT NULL,
    "events" JSONB NOT NULL,
    "data" BYTEA NOT NULL,

    CONSTRAINT "RecordingChunk_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "TerminalRecording_startedAt_idx" ON "TerminalRecording"("startedAt");

-- CreateIndex
CREATE UNIQUE INDEX "TerminalRecording_sessionId_machine_key" ON "TerminalRecording"("sessionId", "machine");

-- CreateIndex
CREATE INDEX "RecordingChunk_recordingId_offset_idx" ON "RecordingChunk"("recordingId", "offset");

-- AddForeignKey
ALTER TABLE "TerminalRecording" ADD CONSTRAINT "TerminalRecording_sessionId_fkey" FOREIGN KEY ("sessionId") REFERENCES "LabSession"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "RecordingChunk" ADD CONSTRAINT "RecordingChunk_recordingId_fkey" FOREIGN KEY ("recordingId") REFERENCES "TerminalRecording"("id") ON DELETE CASCADE ON UPDATE CASCADE;
