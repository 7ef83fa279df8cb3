/**
 * The process-wide services, built once by the composition root (compose.ts) and set here by
 * server.ts. Next.js compiles route handlers into its own module graph, so they reach these
 * through globalThis (getServicesOrThrow) rather than by import.
 */
import type { Auth } from "../auth/auth";
import type { Provisioner } from "../cohorts/provision";
import type { WatchRegistry } from "../cohorts/watchers";
import { previewBase, type Env } from "../config";
import type { Db } from "../db/client";
import type { EventBus } from "../events/bus";
import type { ExamScorer } from "../exams/scoring";
import type { Progress } from "../grader/progress";
import type { TabView } from "../terminal/tab-names";
import type { Grader } from "../grader/grader";
import type { LabCatalog } from "../labs/catalog";
import type { refuseUnbuiltImage } from "../machines/qemu/image-status";
import type { MachineProvider } from "../machines/provider";
import type { PreviewBase } from "../preview/address";
import type { SshExecPool } from "../ssh/exec";
import type { SessionSweeper } from "../sessions/sweeper";
import type { TerminalRegistry } from "../terminal/registry";

/** What the platform's notices carry (server/events/bus.ts passes them on without naming them). */
export type PlatformPayloads = { progress: Progress; tab: TabView };
export type PlatformBus = EventBus<PlatformPayloads>;

export interface Services {
  env: Env;
  db: Db;
  /** HMAC key for terminal tokens (better-auth's key is derived from it). */
  secret: Buffer;
  /** Identity: better-auth on our database (server/auth/auth.ts). */
  auth: Auth;
  provider: MachineProvider;
  terminals: TerminalRegistry;
  labs: LabCatalog;
  /**
   * Null when the lab's machine image is there, else the refusal a session start answers
   * (server/machines/qemu/image-status.ts). A service, not an import in the route: the image code reads
   * paths only known at run time, which Next's file tracing cannot follow.
   */
  refuseUnbuiltImage: (lab: Parameters<typeof refuseUnbuiltImage>[1]) => ReturnType<typeof refuseUnbuiltImage>;
  /** SSH exec channels for checks and setup, apart from learners' shells. */
  pool: SshExecPool;
  bus: PlatformBus;
  grader: Grader;
  /** Session expiry and idle suspension; learner activity goes here. */
  sweeper: SessionSweeper;
  /** Who watches which session's terminals read-only (cohort dashboards; learner's notice). */
  watchers: WatchRegistry;
  /** Pre-provisioning jobs: started here, resumed here when their process died. */
  provisioner: Provisioner;
  /** Exam hand-ins by deadline and scoring (server/exams/). */
  exams: ExamScorer;
  /** The web preview's base (server/preview/), known once the server listens; unset: from env alone. */
  previewBase?: () => PreviewBase;
}

const KEY = Symbol.for("labdeck.services");

export function setServices(services: Services): void {
  (globalThis as Record<symbol, unknown>)[KEY] = services;
}

/** Throws when called outside the Labdeck server process (e.g. `next dev` without server.ts). */
export function getServicesOrThrow(): Services {
  const services = (globalThis as Record<symbol, unknown>)[KEY] as Services | undefined;
  if (!services) throw new Error("Labdeck services are not initialised: start the app with server.ts");
  return services;
}

/** The web preview's base: what server.ts set once listening, else from the environment alone. */
export function previewBaseOf(services: Services): PreviewBase {
  return services.previewBase?.() ?? previewBase(services.env);
}
