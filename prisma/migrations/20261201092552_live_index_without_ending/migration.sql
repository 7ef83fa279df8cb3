-- A session whose machines are being released no longer holds the learner's one live session of
-- a lab: they may start again while the teardown is retried. (A separate migration from the one
-- adding 'ending': PostgreSQL refuses a new enum value in the transaction that added it.)
DROP INDEX "LabSession_live_per_learner_lab";
CREATE UNIQUE INDEX "LabSession_live_per_learner_lab" ON "LabSession"("learnerId", "labSlug") WHERE "state" NOT IN ('ending', 'ended');
