/**
 * A server process that dies in the middle of a session start, for the reconciler's tests
 * (server/sessions/reconcile.db.test.ts): it starts a lab session through the real
 * startOrResumeSession on the database in DATABASE_URL, with a machine provider at the far edge
 * whose create() never answers (a boot that is still running), and waits to be killed -9.
 *   DATABASE_URL=... tsx server/testing/hanging-start.ts <learnerId>
 */
import { randomBytes } from "node:crypto";
import { configureMachineKeys } from "../machines/sealed-keys";
import { createDb } from "../db/client";
import type { MachineProvider } from "../machines/provider";
import { startOrResumeSession } from "../sessions/lab-sessions";

/** Machine keys are sealed with the platform secret; any secret does here. */
configureMachineKeys(randomBytes(32));

const learnerId = process.argv[2] ?? "learner";
const db = createDb(process.env.DATABASE_URL!);
const stuck: MachineProvider = {
  name: "fake-stuck",
  create: () => new Promise(() => {}),
  destroy: async () => {},
};
void startOrResumeSession(db, stuck, { learnerId, labSlug: "hello-terminal", machines: ["controlplane"] });
process.stdout.write("starting\n");
setInterval(() => {}, 1_000);
