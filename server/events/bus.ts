/**
 * In-process publish/subscribe for things browsers watch live (progress now; dashboards later).
 * One process today; a multi-process deployment swaps this for PostgreSQL LISTEN/NOTIFY behind
 * the same two methods.
 */
import { EventEmitter } from "node:events";
import type { Progress } from "../grader/progress";

export class EventBus {
  private readonly emitter = new EventEmitter();

  constructor() {
    // Each open lab page subscribes once; there is no fixed bound on listeners per session.
    this.emitter.setMaxListeners(0);
  }

  publishProgress(progress: Progress): void {
    this.emitter.emit(`progress:${progress.sessionId}`, progress);
    this.emitter.emit("session-change", progress.sessionId);
  }

  /**
   * Something an instructor sees about a session changed without changing the learner's
   * Progress (a failing background check, a session started or ended, time extended).
   */
  publishSessionChange(sessionId: string): void {
    this.emitter.emit("session-change", sessionId);
  }

  /** Calls `listener` with the id of every session whose dashboard view changed (cohort dashboards). */
  onAnySessionChange(listener: (sessionId: string) => void): () => void {
    this.emitter.on("session-change", listener);
    return () => this.emitter.off("session-change", listener);
  }

  /** Who is watching a session's terminals read-only now (names), for the learner's notice. */
  publishWatchers(sessionId: string, watchers: readonly string[]): void {
    this.emitter.emit(`watchers:${sessionId}`, watchers);
  }

  onWatchers(sessionId: string, listener: (watchers: readonly string[]) => void): () => void {
    const name = `watchers:${sessionId}`;
    this.emitter.on(name, listener);
    return () => this.emitter.off(name, listener);
  }

  /** Calls `listener` with every progress change of a session; returns the unsubscribe function. */
  onProgress(sessionId: string, listener: (progress: Progress) => void): () => void {
    const name = `progress:${sessionId}`;
    this.emitter.on(name, listener);
    return () => this.emitter.off(name, listener);
  }
}
