/**
 * After a start, the first shells of recently active live sessions are logged in to ahead of the
 * pages: on a real PostgreSQL, with the terminal registry at the far edge (a fake that records
 * what it was asked to prewarm).
 */
import pino from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Db } from "../db/client";
import { startTestDb } from "../testing/test-db";
import { prewarmRecentSessions } from "./prewarm";

let db: Db;
let stop: () => Promise<void>;

beforeAll(async () => {
  ({ db, stop } = await startTestDb());
}, 60_000);
afterAll(async () => stop?.());

async function session(learnerId: string, state: "ready" | "ended" | "suspended", activeMinutesAgo: number): Promise<string> {
  const row = await db.labSession.create({
    data: {
      labSlug: "preinstall-checks",
      learnerId,
      state,
      provider: "static",
      lastActivityAt: new Date(Date.now() - activeMinutesAgo * 60_000),
      machines: {
        create: ["node01", "controlplane"].map((name, i) => ({
          name,
          host: "127.0.0.1",
          port: 2200 + i,
          user: "root",
          privateKey: "k",
          hostKey: "h",
          providerRef: `${learnerId}/${name}`,
        })),
      },
    },
  });
  return row.id;
}

it("prewarms the first shells of live sessions active lately, most recent first, and no others", async () => {
  const recent = await session("learner-recent", "ready", 1);
  const older = await session("learner-older", "ready", 5);
  await session("learner-idle", "ready", 60);
  await session("learner-ended", "ended", 1);
  await session("learner-suspended", "suspended", 1);
  const asked: { sessionId: string; machines: readonly string[] }[] = [];
  const terminals = { prewarm: async (sessionId: string, machines: readonly string[]) => void asked.push({ sessionId, machines }) };

  const ids = await prewarmRecentSessions(db, terminals, pino({ level: "silent" }), {
    activeWithinMs: 10 * 60_000,
    maxSessions: 30,
    concurrency: 1,
  });
  expect(ids).toEqual([recent, older]);
  expect(asked).toEqual([
    { sessionId: recent, machines: ["controlplane", "node01"] },
    { sessionId: older, machines: ["controlplane", "node01"] },
  ]);

  // The bound: only the most recent one.
  asked.length = 0;
  expect(
    await prewarmRecentSessions(db, terminals, pino({ level: "silent" }), { activeWithinMs: 10 * 60_000, maxSessions: 1, concurrency: 4 }),
  ).toEqual([recent]);
  expect(asked.map((a) => a.sessionId)).toEqual([recent]);
});
