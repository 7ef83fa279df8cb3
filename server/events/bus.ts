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
  }

  /** Calls `listener` with every progress change of a session; returns the unsubscribe function. */
  onProgress(sessionId: string, listener: (progress: Progress) => void): () => void {
    const name = `progress:${sessionId}`;
    this.emitter.on(name, listener);
    return () => this.emitter.off(name, listener);
  }
}
