/**
 * After a start (a deploy, a crash), the first shells of the sessions whose learners were active
 * lately are logged in to before their pages reconnect: an SSH login into a one-vCPU guest under
 * TCG takes 2-4 s on a busy host, which the page would otherwise wait for after the server
 * listens. Bounded: the most recently active sessions only, a few at a time.
 */
import type { Logger } from "pino";
import type { Db } from "../db/client";
import type { TerminalRegistry } from "../terminal/registry";

export interface PrewarmOptions {
  /** Sessions with learner activity this recent, ms. */
  activeWithinMs: number;
  /** Most sessions prewarmed. */
  maxSessions: number;
  /** Sessions whose machines are looked up and logged in to at once. */
  concurrency: number;
}

export const PREWARM_DEFAULTS: PrewarmOptions = { activeWithinMs: 10 * 60_000, maxSessions: 30, concurrency: 4 };

/** Prewarms the recently active live sessions' first shells; resolves with the session ids, most recent first. */
export async function prewarmRecentSessions(
  db: Db,
  terminals: Pick<TerminalRegistry, "prewarm">,
  log: Logger,
  options: PrewarmOptions = PREWARM_DEFAULTS,
): Promise<string[]> {
  const sessions = await db.labSession.findMany({
    where: { state: "ready", lastActivityAt: { gte: new Date(Date.now() - options.activeWithinMs) } },
    orderBy: { lastActivityAt: "desc" },
    take: options.maxSessions,
    select: { id: true, machines: { select: { name: true }, orderBy: { name: "asc" } } },
  });
  const queue = [...sessions];
  const worker = async () => {
    for (let s = queue.shift(); s; s = queue.shift()) {
      await terminals.prewarm(
        s.id,
        s.machines.map((m) => m.name),
      );
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency, queue.length) }, worker));
  if (sessions.length > 0) log.info({ sessions: sessions.length }, "terminals of recently active sessions prewarmed");
  return sessions.map((s) => s.id);
}
