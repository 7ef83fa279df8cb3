/**
 * Prometheus metrics of one server process (prom-client). One registry per process, kept on
 * globalThis: Next.js compiles route handlers into its own module graph, and a route that
 * observes a metric (a session start) must reach the same registry that /metrics serves.
 *
 * Counters and histograms are observed where things happen; gauges of state that already lives
 * somewhere (sessions by state, the warm pool, grader lag, the database pool) are read when
 * scraped, through the sources `observeProcess` is given.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

export interface Metrics {
  registry: Registry;
  /** Click to ready: a session start or resume, seconds, by how its machines came (`warm`, `cold`, `resume`, `existing`). */
  sessionStartSeconds: Histogram<"source">;
  /** One check run, seconds, by outcome and trigger (poll, manual). */
  checkSeconds: Histogram<"outcome" | "trigger">;
  /** Terminal bytes relayed through this process: `out` to browsers, `in` typed. */
  terminalBytes: Counter<"direction">;
  /** Times a terminal's output was paused because a browser could not keep up. */
  backpressurePauses: Counter;
  terminalSnapshots: Counter;
  /** Terminal WebSockets open on this process, by mode (write, read). */
  terminalSockets: Gauge<"mode">;
  /** Static host group resets by outcome (ok, failed); a failed group is held out and retried. */
  hostGroupResets: Counter<"outcome">;
}

const KEY = Symbol.for("labdeck.metrics");

function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "labdeck_" });
  const registers = [registry];
  return {
    registry,
    sessionStartSeconds: new Histogram({
      name: "labdeck_session_start_seconds",
      help: "Lab session start (click to ready), seconds",
      labelNames: ["source"],
      // From a handed-out warm set (seconds) to a cold 3-VM boot under load (minutes).
      buckets: [0.5, 1, 2, 5, 10, 20, 30, 60, 120, 240, 480],
      registers,
    }),
    checkSeconds: new Histogram({
      name: "labdeck_check_duration_seconds",
      help: "Check runs by outcome and trigger, seconds",
      labelNames: ["outcome", "trigger"],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
      registers,
    }),
    terminalBytes: new Counter({
      name: "labdeck_terminal_bytes_total",
      help: "Terminal bytes relayed (out: to browsers, in: typed)",
      labelNames: ["direction"],
      registers,
    }),
    backpressurePauses: new Counter({
      name: "labdeck_terminal_backpressure_pauses_total",
      help: "Terminal output paused for a slow browser",
      registers,
    }),
    terminalSnapshots: new Counter({
      name: "labdeck_terminal_snapshots_total",
      help: "Screen snapshots sent to viewers whose offset was no longer held",
      registers,
    }),
    terminalSockets: new Gauge({
      name: "labdeck_terminal_sockets",
      help: "Open terminal WebSockets by mode",
      labelNames: ["mode"],
      registers,
    }),
    hostGroupResets: new Counter({
      name: "labdeck_host_group_resets_total",
      help: "Static host group resets by outcome (failed: held out, retried with backoff)",
      labelNames: ["outcome"],
      registers,
    }),
  };
}

export function metrics(): Metrics {
  const slot = globalThis as Record<symbol, Metrics | undefined>;
  return (slot[KEY] ??= createMetrics());
}

/** State read at scrape time. Each source may be missing (a process without that role). */
export interface ProcessSources {
  /** Lab sessions by state, from the database. */
  sessionsByState(): Promise<Record<string, number>>;
  /** The warm pool: sets ready, and hand-outs since start (warm = from the pool, cold = a boot). */
  pool?(): { ready: number; size: number; served: { warm: number; cold: number } } | null;
  /** How far the grader is behind its schedule, ms (0: nothing overdue). */
  graderLagMs?(): number;
  /** The database connection pool: connections open, idle, and requests waiting for one. */
  dbPool?(): { total: number; idle: number; waiting: number };
}

/** Registers the scrape-time gauges; call once per process (later calls replace the sources). */
export function observeProcess(sources: ProcessSources): void {
  const { registry } = metrics();
  for (const name of [
    "labdeck_sessions",
    "labdeck_warm_pool_sets",
    "labdeck_warm_pool_handouts",
    "labdeck_grader_lag_seconds",
    "labdeck_db_pool_connections",
  ]) {
    registry.removeSingleMetric(name);
  }
  const registers = [registry];
  new Gauge({
    name: "labdeck_sessions",
    help: "Lab sessions by state",
    labelNames: ["state"],
    registers,
    async collect() {
      this.reset();
      for (const [state, n] of Object.entries(await sources.sessionsByState())) this.set({ state }, n);
    },
  });
  new Gauge({
    name: "labdeck_warm_pool_sets",
    help: "Warm pool sets ready and the pool's size",
    labelNames: ["kind"],
    registers,
    collect() {
      const pool = sources.pool?.();
      this.reset();
      if (pool) {
        this.set({ kind: "ready" }, pool.ready);
        this.set({ kind: "size" }, pool.size);
      }
    },
  });
  new Gauge({
    name: "labdeck_warm_pool_handouts",
    help: "Session machines since start: hit = from the warm pool, miss = booted cold",
    labelNames: ["result"],
    registers,
    collect() {
      const pool = sources.pool?.();
      this.reset();
      if (pool) {
        this.set({ result: "hit" }, pool.served.warm);
        this.set({ result: "miss" }, pool.served.cold);
      }
    },
  });
  new Gauge({
    name: "labdeck_grader_lag_seconds",
    help: "How far the grader is behind its schedule (oldest overdue check), seconds",
    registers,
    collect() {
      this.set((sources.graderLagMs?.() ?? 0) / 1000);
    },
  });
  new Gauge({
    name: "labdeck_db_pool_connections",
    help: "Database pool connections by state (waiting: requests queued for a connection)",
    labelNames: ["state"],
    registers,
    collect() {
      const p = sources.dbPool?.();
      this.reset();
      if (p) {
        this.set({ state: "total" }, p.total);
        this.set({ state: "idle" }, p.idle);
        this.set({ state: "waiting" }, p.waiting);
      }
    },
  });
}
