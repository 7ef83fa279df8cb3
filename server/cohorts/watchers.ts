/**
 * Who is watching a lab session's terminals read-only right now, across server processes. The
 * terminal gateway of this process reports each read-only viewer attaching and detaching; the
 * registry keeps this process's counts and mirrors them into `WatchPresence` rows (one per
 * session, user and process), refreshed every HEARTBEAT_MS so that the rows of a process that
 * died stop counting after PRESENCE_GRACE_MS. When a user starts watching a session (their first
 * read viewer on it through this process) the view is written to the audit log; every change is
 * published on the event bus, and any process's learner page reads the union from the rows.
 */
import { randomUUID } from "node:crypto";
import type { Db } from "../db/client";
import type { EventBus } from "../events/bus";
import { log } from "../log";
import { recordAudit } from "../audit";

export interface ViewerEvent {
  sessionId: string;
  machine: string;
  mode: "write" | "read";
  /** User id the terminal token was issued to. */
  userId: string;
  attached: boolean;
}

/** How often this process refreshes its presence rows, in ms. */
export const HEARTBEAT_MS = 20_000;
/** Rows not refreshed for this long belong to a process that is gone, in ms (three heartbeats). */
export const PRESENCE_GRACE_MS = 3 * HEARTBEAT_MS;

export class WatchRegistry {
  /** sessionId -> userId -> { name, open read viewers } through this process. */
  private readonly sessions = new Map<string, Map<string, { name: string; viewers: number }>>();
  /** This process's rows in WatchPresence. */
  readonly processId = randomUUID();
  private heartbeat: NodeJS.Timeout | null = null;

  constructor(private readonly deps: { db: Db; bus: EventBus }) {}

  /** Starts refreshing this process's presence rows (and dropping long-dead processes' rows). */
  start(): void {
    this.heartbeat ??= setInterval(() => void this.beat(), HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  /** Stops the heartbeat and removes this process's rows (a clean stop: nobody watches through it). */
  async stop(): Promise<void> {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
    const sessions = [...this.sessions.keys()];
    this.sessions.clear();
    await this.deps.db.watchPresence.deleteMany({ where: { processId: this.processId } }).catch(() => undefined);
    for (const sessionId of sessions) await this.deps.bus.publishWatchers(sessionId);
  }

  private async beat(): Promise<void> {
    const { db } = this.deps;
    try {
      if (this.sessions.size > 0) await db.watchPresence.updateMany({ where: { processId: this.processId }, data: { seenAt: new Date() } });
      await db.watchPresence.deleteMany({ where: { seenAt: { lt: new Date(Date.now() - 10 * PRESENCE_GRACE_MS) } } });
    } catch (error) {
      log.warn({ err: error }, "watch presence heartbeat failed");
    }
  }

  /** Events of one session are applied in order (an attach's lookups finish before its detach counts). */
  private readonly chains = new Map<string, Promise<void>>();

  /** For the gateway's onViewer hook; never throws. */
  readonly onViewer = (event: ViewerEvent): void => {
    if (event.mode !== "read") return;
    const previous = this.chains.get(event.sessionId) ?? Promise.resolve();
    const next = previous
      .then(() => this.apply(event))
      .catch((error: Error) => log.error({ err: error.message, sid: event.sessionId }, "watch registry"));
    this.chains.set(event.sessionId, next);
    void next.then(() => {
      if (this.chains.get(event.sessionId) === next) this.chains.delete(event.sessionId);
    });
  };

  /** Names of the users watching a session now, through any live process. */
  async watchers(sessionId: string): Promise<string[]> {
    const rows = await this.deps.db.watchPresence.findMany({
      where: { sessionId, viewers: { gt: 0 }, seenAt: { gte: new Date(Date.now() - PRESENCE_GRACE_MS) } },
      select: { userId: true },
      distinct: ["userId"],
    });
    if (rows.length === 0) return [];
    const users = await this.deps.db.user.findMany({ where: { id: { in: rows.map((r) => r.userId) } }, select: { name: true } });
    return users.map((u) => u.name).sort();
  }

  private async apply(event: ViewerEvent): Promise<void> {
    let users = this.sessions.get(event.sessionId);
    if (event.attached) {
      if (!users) this.sessions.set(event.sessionId, (users = new Map()));
      const entry = users.get(event.userId);
      if (entry) {
        entry.viewers += 1;
        await this.writePresence(event.sessionId, event.userId, entry.viewers);
        return;
      }
      // The learner opening their own session read-only is not being watched.
      const session = await this.deps.db.labSession.findUnique({ where: { id: event.sessionId }, select: { learnerId: true } });
      if (!session || session.learnerId === event.userId) {
        if (users.size === 0) this.sessions.delete(event.sessionId);
        return;
      }
      const user = await this.deps.db.user.findUnique({ where: { id: event.userId }, select: { name: true } });
      users.set(event.userId, { name: user?.name ?? "?", viewers: 1 });
      await this.writePresence(event.sessionId, event.userId, 1);
      await recordAudit(this.deps.db, {
        actorId: event.userId,
        action: "session.watch",
        targetType: "session",
        targetId: event.sessionId,
        detail: { machine: event.machine },
      });
    } else {
      const entry = users?.get(event.userId);
      if (!users || !entry) return;
      entry.viewers -= 1;
      await this.writePresence(event.sessionId, event.userId, entry.viewers);
      if (entry.viewers > 0) return;
      users.delete(event.userId);
      if (users.size === 0) this.sessions.delete(event.sessionId);
    }
    await this.deps.bus.publishWatchers(event.sessionId);
  }

  private async writePresence(sessionId: string, userId: string, viewers: number): Promise<void> {
    const key = { sessionId_userId_processId: { sessionId, userId, processId: this.processId } };
    if (viewers <= 0) await this.deps.db.watchPresence.deleteMany({ where: { sessionId, userId, processId: this.processId } });
    else
      await this.deps.db.watchPresence.upsert({
        where: key,
        create: { sessionId, userId, processId: this.processId, viewers },
        update: { viewers, seenAt: new Date() },
      });
  }
}
