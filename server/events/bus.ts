/**
 * Live events across server processes, over PostgreSQL LISTEN/NOTIFY: whatever process decides
 * something (the grader passing a step, a hint revealed, a watcher attaching) publishes a notice
 * on one channel, and every process with browsers that care turns it into events for them. A
 * notice carries ids only (NOTIFY payloads are limited to 8,000 bytes, and data read at delivery
 * is never stale): each receiving process loads what its subscribers need, once per notice, and
 * only for sessions someone subscribed to through it.
 *
 * Notices travel on the dedicated LISTEN connection's server; publishing goes through the same
 * database (any connection), so a page on process B sees what the grader on process A decided.
 * When the LISTEN connection drops, it reconnects with backoff and then tells every local
 * subscriber to reload (notices sent meanwhile are lost, their effect is not).
 */
import { EventEmitter } from "node:events";
import pg from "pg";
import { z } from "zod";
import type { Db } from "../db/client";
import type { Logger } from "pino";

/** The one NOTIFY channel of the platform. */
export const EVENTS_CHANNEL = "labdeck_events";

/** Reconnect backoff of the LISTEN connection: first and longest wait, in ms. */
const RECONNECT_MIN_MS = 250;
const RECONNECT_MAX_MS = 10_000;
/** How long a load waits after the first notice of a burst so the rest fold into it, ms (a dashboard cell updates this much later). */
const LOAD_GATHER_MS = 20;

/**
 * A notice on the wire: `k` what changed, `s` the lab session. `progress`: the learner's Progress
 * (and so the dashboards); `session`: only what instructors see (a failing check's feedback, a
 * start, an end); `watchers`: who watches the session read-only; `tabs`: the learner opened or
 * closed an extra shell (server/sessions/tabs.ts).
 */
const SessionNotice = z.object({ k: z.enum(["progress", "session", "watchers", "tabs"]), s: z.string().min(1).max(200) });
/**
 * `access`: what user `u` may reach changed (signed out, removed from a cohort, a cohort of
 * theirs ended); every process re-decides that user's open sockets and event streams.
 */
const AccessNotice = z.object({ k: z.literal("access"), u: z.string().min(1).max(200) });
/**
 * `restored`: machine `m` of session `s` was put back to a saved state (a reset): connections
 * into it from before are dead without knowing it, so every process re-attaches its terminals now.
 */
const RestoredNotice = z.object({ k: z.literal("restored"), s: z.string().min(1).max(200), m: z.string().min(1).max(64) });
/** `resetting`: machine `m` of session `s` is being reset: terminals into it wait for `restored` instead of retrying. */
const ResettingNotice = z.object({ k: z.literal("resetting"), s: z.string().min(1).max(200), m: z.string().min(1).max(64) });
const Notice = z.discriminatedUnion("k", [SessionNotice, AccessNotice, RestoredNotice, ResettingNotice]);
type Notice = z.infer<typeof Notice>;

/**
 * What a loaded notice carries: a learner's progress (the grader's Progress) and a session's open
 * extra tabs (the terminal's TabView). The bus only passes them on, so it names no domain's types:
 * the composition root does (server/compose/services.ts, PlatformBus).
 */
export interface EventPayloads {
  progress: unknown;
  tab: unknown;
}

/** Where the data behind a notice is read from when a process has subscribers for it. */
export interface EventSources<P extends EventPayloads = EventPayloads> {
  progress(sessionId: string): Promise<P["progress"]>;
  watchers(sessionId: string): Promise<string[]>;
  /** The session's open extra tabs; without it `onTabs` subscribers get nothing. */
  tabs?(sessionId: string): Promise<P["tab"][]>;
}

export class EventBus<P extends EventPayloads = EventPayloads> {
  private readonly emitter = new EventEmitter();
  private client: pg.Client | null = null;
  private sources: EventSources<P> | null = null;
  private stopped = false;
  private reconnectDelay = RECONNECT_MIN_MS;
  private reconnectTimer: NodeJS.Timeout | null = null;
  /** Per session and kind: a load in flight, and whether another notice came meanwhile. */
  private readonly loads = new Map<string, { again: boolean }>();

  constructor(private readonly deps: { db: Db; databaseUrl: string; log: Logger }) {
    // Each open lab page subscribes once; there is no fixed bound on listeners per session.
    this.emitter.setMaxListeners(0);
  }

  /** Connects the LISTEN connection; rejects when the database cannot be reached at all. */
  async start(sources: EventSources<P>): Promise<void> {
    this.sources = sources;
    await this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  /** The learner's progress in a session changed (a step passed, a hint, a manual check's feedback). */
  publishProgress(sessionId: string): Promise<void> {
    return this.publish({ k: "progress", s: sessionId });
  }

  /**
   * Something an instructor sees about a session changed without changing the learner's
   * Progress (a failing background check, a session started or ended, time extended).
   */
  publishSessionChange(sessionId: string): Promise<void> {
    return this.publish({ k: "session", s: sessionId });
  }

  /** The set of users watching a session's terminals read-only changed. */
  publishWatchers(sessionId: string): Promise<void> {
    return this.publish({ k: "watchers", s: sessionId });
  }

  /** The learner opened or closed an extra shell of the session. */
  publishTabs(sessionId: string): Promise<void> {
    return this.publish({ k: "tabs", s: sessionId });
  }

  /** Calls `listener` with the session's open extra tabs whenever they change (watch views). */
  onTabs(sessionId: string, listener: (tabs: P["tab"][]) => void): () => void {
    return this.subscribe(`tabs:${sessionId}`, listener);
  }

  /**
   * Calls `listener` with the id of every session whose tabs changed (each process's terminal
   * registry ends its terminals of closed tabs), and with null after missed notices.
   */
  onAnyTabsChange(listener: (sessionId: string | null) => void): () => void {
    return this.subscribe("tabs-change", listener);
  }

  /**
   * What `userId` may reach changed: every process re-decides that user's live terminal sockets
   * and event streams and closes those no longer allowed (with a reason).
   */
  publishAccessChange(userId: string): Promise<void> {
    return this.publish({ k: "access", u: userId });
  }

  /** A machine of a session was restored to a saved state (snapshots.ts): its terminals re-attach. */
  publishMachineRestored(sessionId: string, machine: string): Promise<void> {
    return this.publish({ k: "restored", s: sessionId, m: machine });
  }

  /** A machine of a session is being reset (a `restored` notice follows, also when the reset fails). */
  publishMachineResetting(sessionId: string, machine: string): Promise<void> {
    return this.publish({ k: "resetting", s: sessionId, m: machine });
  }

  /** Calls `listener` for every machine a reset began on (any process's). */
  onMachineResetting(listener: (machine: { sessionId: string; machine: string }) => void): () => void {
    return this.subscribe("resetting", listener);
  }

  /** Calls `listener` for every restored machine (any process's reset). */
  onMachineRestored(listener: (machine: { sessionId: string; machine: string }) => void): () => void {
    return this.subscribe("restored", listener);
  }

  /** Calls `listener` with the user of every access notice, and with null after missed notices (re-decide everyone). */
  onAccessChange(listener: (userId: string | null) => void): () => void {
    return this.subscribe("access", listener);
  }

  /** Calls `listener` with every progress change of a session; returns the unsubscribe function. */
  onProgress(sessionId: string, listener: (progress: P["progress"]) => void): () => void {
    return this.subscribe(`progress:${sessionId}`, listener);
  }

  /** Who is watching a session's terminals read-only now (names), for the learner's notice. */
  onWatchers(sessionId: string, listener: (watchers: readonly string[]) => void): () => void {
    return this.subscribe(`watchers:${sessionId}`, listener);
  }

  /**
   * Calls `listener` with the id of every session whose dashboard view changed (cohort
   * dashboards), and with null after missed notices (reload everything).
   */
  onAnySessionChange(listener: (sessionId: string | null) => void): () => void {
    return this.subscribe("session-change", listener);
  }

  private subscribe<T>(name: string, listener: (value: T) => void): () => void {
    this.emitter.on(name, listener);
    return () => this.emitter.off(name, listener);
  }

  /** Publishing never throws at the caller: a lost notice is logged (pages reload on reconnect). */
  private async publish(notice: Notice): Promise<void> {
    try {
      await this.deps.db.$executeRaw`SELECT pg_notify(${EVENTS_CHANNEL}, ${JSON.stringify(notice)})`;
    } catch (error) {
      this.deps.log.warn({ err: (error as Error).message, notice }, "event not published");
    }
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.deps.databaseUrl, application_name: "labdeck-events" });
    client.on("error", (error) => this.lost(client, error));
    client.on("end", () => this.lost(client));
    client.on("notification", (message) => {
      if (message.channel !== EVENTS_CHANNEL || !message.payload) return;
      let parsed: unknown;
      try {
        parsed = JSON.parse(message.payload);
      } catch {
        parsed = null;
      }
      const notice = Notice.safeParse(parsed);
      if (!notice.success) return void this.deps.log.warn({ payload: message.payload.slice(0, 200) }, "malformed event notice ignored");
      this.deliver(notice.data);
    });
    await client.connect();
    await client.query(`LISTEN ${EVENTS_CHANNEL}`);
    this.client = client;
    this.reconnectDelay = RECONNECT_MIN_MS;
  }

  private lost(client: pg.Client, error?: Error): void {
    if (this.client !== client || this.stopped) return;
    this.client = null;
    this.deps.log.warn({ err: error?.message }, "event connection lost; reconnecting");
    client.end().catch(() => undefined);
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.reconnectTimer) return;
    const delay = this.reconnectDelay;
    this.reconnectDelay = Math.min(RECONNECT_MAX_MS, this.reconnectDelay * 2);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      this.connect().then(
        () => this.resync(),
        (error: Error) => {
          this.deps.log.warn({ err: error.message, retryInMs: this.reconnectDelay }, "event connection failed");
          this.scheduleReconnect();
        },
      );
    }, delay);
  }

  /** After a gap in notices: every local subscriber reloads what it shows. */
  private resync(): void {
    for (const name of this.emitter.eventNames()) {
      if (typeof name !== "string") continue;
      const [kind, sessionId] = name.split(":", 2);
      if (kind === "progress" && sessionId) this.load("progress", sessionId);
      if (kind === "watchers" && sessionId) this.load("watchers", sessionId);
      if (kind === "tabs" && sessionId) this.load("tabs", sessionId);
    }
    this.emitter.emit("session-change", null);
    this.emitter.emit("tabs-change", null);
    this.emitter.emit("access", null);
  }

  private deliver(notice: Notice): void {
    if (notice.k === "access") return void this.emitter.emit("access", notice.u);
    if (notice.k === "restored") return void this.emitter.emit("restored", { sessionId: notice.s, machine: notice.m });
    if (notice.k === "resetting") return void this.emitter.emit("resetting", { sessionId: notice.s, machine: notice.m });
    if (notice.k === "tabs") {
      this.emitter.emit("tabs-change", notice.s);
      return this.load("tabs", notice.s);
    }
    if (notice.k !== "watchers") this.emitter.emit("session-change", notice.s);
    if (notice.k === "progress") this.load("progress", notice.s);
    if (notice.k === "watchers") this.load("watchers", notice.s);
  }

  /**
   * Loads and emits the data behind a notice when this process has subscribers for it. The load
   * starts LOAD_GATHER_MS after the first notice, and notices that arrive meanwhile or while it
   * runs fold into one more load after it: a burst costs about two reads, also when its notices
   * come spread over a few milliseconds (one per TCP read on a busy host: measured 20 loads for
   * 20 notices in a CI dry run without the wait).
   */
  private load(kind: "progress" | "watchers" | "tabs", sessionId: string): void {
    const name = `${kind}:${sessionId}`;
    if (this.emitter.listenerCount(name) === 0 || !this.sources) return;
    const pending = this.loads.get(name);
    if (pending) return void (pending.again = true);
    const state = { again: false };
    this.loads.set(name, state);
    const sources = this.sources;
    const run = async (): Promise<void> => {
      do {
        state.again = false;
        const value =
          kind === "progress"
            ? await sources.progress(sessionId)
            : kind === "watchers"
              ? await sources.watchers(sessionId)
              : await (sources.tabs?.(sessionId) ?? Promise.resolve([]));
        this.emitter.emit(name, value);
      } while (state.again && this.emitter.listenerCount(name) > 0);
    };
    new Promise((resolve) => setTimeout(resolve, LOAD_GATHER_MS))
      .then(run)
      .catch((error: Error) => this.deps.log.warn({ err: error, sid: sessionId, kind }, "event data not loaded"))
      .finally(() => this.loads.delete(name));
  }
}
