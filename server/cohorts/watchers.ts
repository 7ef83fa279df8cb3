/**
 * Who is watching a lab session's terminals read-only right now. The terminal gateway reports
 * each read-only viewer attaching and detaching; when a user starts watching a session (their
 * first read viewer on it) the view is written to the audit log, and every change of the set of
 * watchers is published on the event bus, from where the learner's lab page shows a notice.
 */
import type { Db } from "../db/client";
import type { EventBus } from "../events/bus";
import { log } from "../log";
import { recordAudit } from "./audit";

export interface ViewerEvent {
  sessionId: string;
  machine: string;
  mode: "write" | "read";
  /** User id the terminal token was issued to. */
  userId: string;
  attached: boolean;
}

export class WatchRegistry {
  /** sessionId -> userId -> { name, open read viewers } */
  private readonly sessions = new Map<string, Map<string, { name: string; viewers: number }>>();

  constructor(private readonly deps: { db: Db; bus: EventBus }) {}

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

  /** Names of the users watching a session now. */
  watchers(sessionId: string): string[] {
    return [...(this.sessions.get(sessionId)?.values() ?? [])].map((w) => w.name);
  }

  private async apply(event: ViewerEvent): Promise<void> {
    let users = this.sessions.get(event.sessionId);
    if (event.attached) {
      if (!users) this.sessions.set(event.sessionId, (users = new Map()));
      const entry = users.get(event.userId);
      if (entry) {
        entry.viewers += 1;
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
      await recordAudit(this.deps.db, { actorId: event.userId, action: "session.watch", targetType: "session", targetId: event.sessionId, detail: { machine: event.machine } });
    } else {
      const entry = users?.get(event.userId);
      if (!users || !entry) return;
      entry.viewers -= 1;
      if (entry.viewers > 0) return;
      users.delete(event.userId);
      if (users.size === 0) this.sessions.delete(event.sessionId);
    }
    this.deps.bus.publishWatchers(event.sessionId, this.watchers(event.sessionId));
  }
}
