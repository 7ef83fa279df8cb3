/**
 * Lab sessions: a learner's run of a lab and the machines it holds. Plain functions over the
 * database and a machine provider, called by the HTTP layer, the CLI and tests alike.
 */
import { metrics } from "../ops/metrics";
import type { Db } from "../db/client";
import { openPrivateKey, sealIfPlain, sealPrivateKey } from "../machines/sealed-keys";
import { encodeWorded } from "../worded";
import { isNoCapacity, NoCapacityError, type MachineProvider, type ProvisionedMachine } from "../machines/provider";
import { setIdOf } from "../machines/warm-pool";
import {
  LIVE_NOT_QUEUED,
  QUEUE_MAX_WAIT_MS,
  QUEUE_POLL_MS,
  queuedAhead,
  setStartStage,
  setupProgress,
  type StartSource,
} from "./start-progress";
import type { SshExecPool } from "../ssh/exec";
import type { SshEndpoint } from "../ssh/connect";
import { advance, finishEnding, LEASE_MS, LIVE_STATES, reconcileSessions, withLease } from "./lifecycle";

/** How long a request waits for a concurrent request that is starting the same session. */
const CONCURRENT_START_WAIT_MS = 120_000;
const CONCURRENT_START_POLL_MS = 250;

export interface SessionView {
  id: string;
  labSlug: string;
  learnerId: string;
  machines: string[];
  expiresAt: Date | null;
}

/** What a start asks for: the learner, the lab and how its machines are made. */
export interface StartRequest {
  learnerId: string;
  labSlug: string;
  machines: readonly string[];
  image?: string;
  /** lab.yaml `network.internet`: the provider gives outbound access or refuses. */
  internet?: boolean;
  /**
   * The cohort the session runs under (cohorts.ts `cohortLimitsFor`): its idle time is read from
   * the cohort as it is at each sweep, its time limit as it is when the session becomes ready.
   */
  cohortId?: string | null;
  /** Time limit from ready, minutes, unless the cohort sets one (none: no limit). */
  limitMinutes?: number;
  /** When the session's clocks (idle time, time limit) start if that is after it is ready: machines made ahead of class. */
  clockStartsAt?: Date | null;
  /**
   * The lab version a new session pins (server/labs/versions.ts `currentLabVersion`) and its
   * first step; none: pinned to the current lab on first use (server/sessions/lab-versions.ts).
   */
  labVersion?: { hash: string; firstStepId: string | null };
  /**
   * Graded once at the end, not polled (an exam): the grader skips it, it is never suspended as
   * idle, and its time limit is at least `atLeastMinutes` whatever the cohort's.
   */
  gradedAtEnd?: { atLeastMinutes: number };
}

/**
 * Prepares the new session's machines (the lab's setup scripts) before it counts as ready;
 * `onScript` says which script runs where (the start's progress).
 */
export type PrepareSession = (sessionId: string, onScript?: (machine: string, script: string) => (() => void) | void) => Promise<void>;

/**
 * The learner's live session for a lab, or a new one with freshly provided machines: a set the
 * warm pool prepared for the lab (nothing left to run), else machines from the provider and the
 * lab's setup. A start the host has no room for waits in the queue (start-progress.ts) instead
 * of failing. Its stage is written to the row as it goes; `onStarted` learns the session's id as
 * soon as there is one (a page that does not wait for the start). A failed start ends the session
 * (`failed`, with the reason in startError) after releasing whatever it got.
 */
export async function startOrResumeSession(
  db: Db,
  provider: MachineProvider,
  request: StartRequest,
  prepare?: PrepareSession,
  options: {
    onStarted?: (sessionId: string) => void;
    /**
     * Wait in the queue while the host has no room (a learner's start); without it a full host
     * fails the start at once with NoCapacityError (pre-provisioning reports it per learner).
     */
    queue?: boolean;
  } = {},
): Promise<SessionView> {
  const started = performance.now();
  const observe = (source: "existing" | "resume" | "new", result: SessionView) => {
    metrics().sessionStartSeconds.observe({ source }, (performance.now() - started) / 1000);
    return result;
  };
  const live = await joinLiveSession(db, provider, request, options.onStarted);
  if (live) return observe(live.source, live.view);

  let session;
  try {
    session = await db.labSession.create({
      data: {
        learnerId: request.learnerId,
        labSlug: request.labSlug,
        provider: provider.name,
        cohortId: request.cohortId ?? null,
        labVersion: request.labVersion?.hash ?? null,
        currentStepId: request.labVersion?.firstStepId ?? null,
        leaseUntil: new Date(Date.now() + LEASE_MS),
        startStage: "machines",
        gradedAtEnd: request.gradedAtEnd !== undefined,
      },
    });
  } catch (error) {
    // The partial unique index "LabSession_live_per_learner_lab" lost us a race: use the winner's.
    if ((error as { code?: string }).code === "P2002") return startOrResumeSession(db, provider, request, prepare, options);
    throw error;
  }
  const id = session.id;
  options.onStarted?.(id);
  try {
    const ready = await withLease(db, id, () => provideMachines(db, provider, session, request, prepare, options.queue === true));
    return observe("new", view(ready));
  } catch (error) {
    await failStart(db, id, error);
    throw error;
  }
}

/**
 * The learner's live session for the lab, once it can be served: a ready one (touched), a
 * suspended one (resumed), or one another request is starting (waited for). Null when none is live.
 */
async function joinLiveSession(
  db: Db,
  provider: MachineProvider,
  request: StartRequest,
  onStarted?: (sessionId: string) => void,
): Promise<{ source: "existing" | "resume"; view: SessionView } | null> {
  const findLive = () =>
    db.labSession.findFirst({
      where: { learnerId: request.learnerId, labSlug: request.labSlug, state: { in: [...LIVE_STATES] } },
      include: { machines: { select: { name: true } } },
    });
  for (let waited = 0; ; waited += CONCURRENT_START_POLL_MS) {
    const existing = await findLive();
    if (!existing) return null;
    if (existing.state === "ready") {
      await touchSession(db, existing.id);
      return { source: "existing", view: view(existing) };
    }
    if (existing.state === "suspended") return { source: "resume", view: await resumeSession(db, provider, existing.id, onStarted) };
    onStarted?.(existing.id);
    // Another request is providing this learner's machines right now: wait for it, unless the
    // process doing it died (its lease ran out): then the reconciler settles it first.
    if (existing.leaseUntil && existing.leaseUntil.getTime() < Date.now()) {
      await reconcileSessions(db, provider);
      continue;
    }
    if (waited >= CONCURRENT_START_WAIT_MS && existing.startStage !== "queued")
      throw new Error("the lab session is still starting; try again");
    await new Promise((r) => setTimeout(r, CONCURRENT_START_POLL_MS));
  }
}

/**
 * A new session's machines, under its lease: obtained (obtainMachines), stored, set up by
 * `prepare` unless they come set up, and the session made ready. Machines of a failed setup are
 * released. Returns the ready session with its machines' names.
 */
async function provideMachines(
  db: Db,
  provider: MachineProvider,
  session: { id: string; provider: string; createdAt: Date },
  request: StartRequest,
  prepare: PrepareSession | undefined,
  queue: boolean,
) {
  const id = session.id;
  const { machines, source } = await obtainMachines(db, provider, session, request, prepare !== undefined, queue);
  await db.labSession.updateMany({ where: { id }, data: { startSource: source } });
  try {
    await db.machine.createMany({ data: machines.map((m) => ({ ...m, privateKey: sealPrivateKey(m.privateKey), sessionId: id })) });
    // A prepared set or one started from the lab's template is set up already.
    if (prepare && source !== "prepared" && source !== "snapshot") {
      await setStartStage(db, id, "setup");
      const progress = setupProgress(db, id);
      await prepare(id, progress.onScript).finally(progress.settled);
      // The set-up machines as a state to reset to (providers that keep machine states).
      if (provider.markLabStart) {
        await setStartStage(db, id, "saving");
        await provider.markLabStart(id, machines);
      }
    }
  } catch (error) {
    await provider.destroy(id, machines).catch(() => undefined);
    throw error;
  } finally {
    provider.sessionSettled?.(id, machines);
  }
  const now = new Date();
  const clock = request.clockStartsAt && request.clockStartsAt > now ? request.clockStartsAt : now;
  const limitMinutes = atLeast(await sessionLimitMinutes(db, id, request.limitMinutes), request.gradedAtEnd?.atLeastMinutes);
  const expiresAt = limitMinutes ? new Date(clock.getTime() + limitMinutes * 60_000) : null;
  if (
    !(await advance(db, id, ["starting"], "ready", {
      currentStepSince: now,
      lastActivityAt: clock,
      expiresAt,
      readyAt: now,
      startStage: null,
      startDetail: null,
    }))
  ) {
    // Ended meanwhile (an admin ended the cohort, or the reconciler failed a start it thought dead).
    throw new Error("the lab session was ended while it was starting");
  }
  return db.labSession.findUniqueOrThrow({ where: { id }, include: { machines: { select: { name: true } } } });
}

/** A time limit no shorter than `floor` minutes (none stays none). */
function atLeast(minutes: number | undefined, floor: number | undefined): number | undefined {
  return minutes !== undefined && floor !== undefined ? Math.max(minutes, floor) : minutes;
}

/**
 * A session's time limit in minutes as it becomes ready: its cohort's as the cohort is now (a
 * change made while the session was starting counts), else `fallback`.
 */
async function sessionLimitMinutes(db: Db, id: string, fallback: number | undefined): Promise<number | undefined> {
  const session = await db.labSession.findUnique({ where: { id }, select: { cohort: { select: { sessionMinutes: true } } } });
  return session?.cohort?.sessionMinutes ?? fallback;
}

/**
 * Nothing usable was made: the session ends as failed (its progress rows are empty), with the
 * reason for a page that waits on it; unless someone else moved it on meanwhile.
 */
async function failStart(db: Db, id: string, error: unknown): Promise<void> {
  if (
    await advance(db, id, ["starting"], "ending", {
      endReason: "failed",
      // A refusal the page words in its language; any other failure in its own words.
      startError: isNoCapacity(error) ? encodeWorded(error.worded) : (error as Error).message.slice(0, START_ERROR_MAX_CHARS),
    }).catch(() => false)
  ) {
    await advance(db, id, ["ending"], "ended").catch(() => undefined);
  }
}

/** How much of a failed start's message is kept for the page, characters. */
const START_ERROR_MAX_CHARS = 2_000;

/**
 * The machines for a new session: a set the warm pool prepared for the lab version the session
 * pins (when the lab has a setup to skip), else the provider's (a booted pool set or a cold
 * start). While the host has no room (NoCapacityError) or the lab is at its cap (PoolTarget.cap),
 * the start waits in the queue, oldest first, looking again every QUEUE_POLL_MS.
 */
async function obtainMachines(
  db: Db,
  provider: MachineProvider,
  session: { id: string; provider: string; createdAt: Date },
  request: StartRequest,
  hasSetup: boolean,
  queue: boolean,
): Promise<{ machines: ProvisionedMachine[]; source: StartSource }> {
  const id = session.id;
  const ask = { sessionId: id, labSlug: request.labSlug, machines: request.machines, image: request.image, internet: request.internet };
  if (hasSetup && request.labVersion && provider.takePrepared) {
    const taken = await provider.takePrepared({ ...ask, labVersion: request.labVersion.hash });
    if (taken) return taken;
  }
  const create = async () => {
    const machines = await provider.create(ask);
    return { machines, source: setIdOf(id, machines) !== id ? ("pool" as const) : ("cold" as const) };
  };
  return queue ? admitted(db, session, request.labSlug, create) : create();
}

/**
 * Runs `attempt` (a create or a resume) once it is this start's turn and the lab is under its
 * cap; while the host has no room (NoCapacityError) it waits in the queue, stage `queued`,
 * looking again every QUEUE_POLL_MS, oldest start first, for at most QUEUE_MAX_WAIT_MS.
 */
async function admitted<T>(
  db: Db,
  session: { id: string; provider: string; createdAt: Date },
  labSlug: string,
  attempt: () => Promise<T>,
): Promise<T> {
  const deadline = Date.now() + QUEUE_MAX_WAIT_MS;
  for (;;) {
    const waitFor = (await queuedAhead(db, session)) > 0 ? "turn" : await labAtCap(db, labSlug, session.id);
    if (!waitFor) {
      try {
        return await attempt();
      } catch (error) {
        if (!isNoCapacity(error) || Date.now() > deadline) throw error;
        await setStartStage(db, session.id, "queued", (error as Error).message);
      }
    } else {
      if (Date.now() > deadline) {
        const minutes = Math.round(QUEUE_MAX_WAIT_MS / 60_000);
        throw new NoCapacityError({ key: "noCapacityQueue", params: { minutes } }, `waited ${minutes} min in the queue`);
      }
      await setStartStage(db, session.id, "queued", waitFor === "cap" ? "labCap" : null);
    }
    await new Promise((r) => setTimeout(r, QUEUE_POLL_MS));
  }
}

/** "cap" when the lab already has as many live sessions (ready, or starting past the queue) as its PoolTarget.cap. */
async function labAtCap(db: Db, labSlug: string, sessionId: string): Promise<"cap" | null> {
  const target = await db.poolTarget.findUnique({ where: { labSlug }, select: { cap: true } });
  if (target?.cap == null) return null;
  const live = await db.labSession.count({ where: { labSlug, id: { not: sessionId }, ...LIVE_NOT_QUEUED } });
  return live >= target.cap ? "cap" : null;
}

/**
 * Ends a session: releases its machines. Ending is final; progress rows stay. Only the first of
 * several concurrent calls releases the machines.
 */
export async function endSession(
  db: Db,
  provider: MachineProvider,
  sessionId: string,
  reason: "learner" | "expired" | "admin" = "learner",
): Promise<boolean> {
  if (!(await advance(db, sessionId, LIVE_STATES, "ending", { endReason: reason }))) return false;
  // A failed teardown leaves it `ending`: the reconciler retries until the provider succeeds.
  await finishEnding(db, provider, sessionId);
  return true;
}

/**
 * Powers an idle session's machines off, keeping their disks (providers that can; others are
 * left running). False when the session was not ready or the provider cannot suspend.
 */
export async function suspendSession(db: Db, provider: MachineProvider, sessionId: string): Promise<boolean> {
  if (!provider.suspend) return false;
  if (!(await advance(db, sessionId, ["ready"], "suspended"))) return false;
  const machines = await db.machine.findMany({ where: { sessionId } });
  await provider.suspend(sessionId, machines);
  return true;
}

/**
 * Powers a suspended session's machines on again and serves it (new SSH ports are stored). A
 * failure (no capacity) leaves it suspended.
 */
export async function resumeSession(
  db: Db,
  provider: MachineProvider,
  sessionId: string,
  onStarted?: (sessionId: string) => void,
): Promise<SessionView> {
  if (!provider.resume) throw new Error(`provider ${provider.name} cannot resume sessions`);
  if (!(await advance(db, sessionId, ["suspended"], "starting", { startStage: "machines", startDetail: null }))) {
    // Someone else is resuming it: wait as for a start.
    const session = await db.labSession.findUniqueOrThrow({ where: { id: sessionId } });
    return startOrResumeSession(db, provider, { learnerId: session.learnerId, labSlug: session.labSlug, machines: [] }, undefined, {
      onStarted,
    });
  }
  onStarted?.(sessionId);
  try {
    await withLease(db, sessionId, async () => {
      const machines = await db.machine.findMany({ where: { sessionId } });
      const session = await db.labSession.findUniqueOrThrow({ where: { id: sessionId } });
      await db.labSession.updateMany({ where: { id: sessionId }, data: { startSource: "resume" } });
      // A resume takes the host's room as a start does: it waits in the same queue (from now).
      const now = await admitted(db, { id: sessionId, provider: session.provider, createdAt: new Date() }, session.labSlug, () =>
        provider.resume!(sessionId, machines),
      );
      for (const m of now) {
        await db.machine.updateMany({ where: { sessionId, name: m.name }, data: { host: m.host, port: m.port } });
      }
    });
    if (!(await advance(db, sessionId, ["starting"], "ready", { lastActivityAt: new Date(), startStage: null, startDetail: null }))) {
      throw new Error("the lab session was ended while it was resuming");
    }
    return view(await db.labSession.findUniqueOrThrow({ where: { id: sessionId }, include: { machines: { select: { name: true } } } }));
  } catch (error) {
    await advance(db, sessionId, ["starting"], "suspended").catch(() => undefined);
    throw error;
  }
}

/** Records a sign of the learner (terminal input, a check, a hint): the session is not idle. */
export async function touchSession(db: Db, sessionId: string): Promise<void> {
  await db.labSession.updateMany({ where: { id: sessionId, state: "ready" }, data: { lastActivityAt: new Date() } });
}

/** What one sweep did, by session id. */
export interface SweepReport {
  expired: string[];
  suspended: string[];
}

/**
 * Ends sessions whose time is up and suspends ready ones idle longer than their idle time: their
 * cohort's as the cohort is now (an admin's change reaches running sessions), the session's own
 * (`LabSession.idleMinutes`) when it has no cohort, else `idleMs` (0: never). Each
 * session's outcome is reported to `onOver` (to close its terminals). One session's failure does
 * not stop the others.
 */
export async function sweepSessions(
  db: Db,
  provider: MachineProvider,
  options: {
    now?: Date;
    idleMs: number;
    onOver?: (sessionId: string, why: "expired" | "suspended") => void;
    onError?: (sessionId: string, error: Error) => void;
  },
): Promise<SweepReport> {
  const now = options.now ?? new Date();
  const report: SweepReport = { expired: [], suspended: [] };
  const expired = await db.labSession.findMany({
    where: { state: { in: ["ready", "suspended"] }, expiresAt: { lt: now } },
    select: { id: true },
  });
  for (const { id } of expired) {
    try {
      if (await endSession(db, provider, id, "expired")) {
        report.expired.push(id);
        options.onOver?.(id, "expired");
      }
    } catch (error) {
      options.onError?.(id, error as Error);
    }
  }
  if (provider.suspend) {
    // The cohort's idle time, else the session's own, else the platform's; 0 never suspends.
    const ready = await db.labSession.findMany({
      // A session graded at the end (an exam) is never suspended: its clock runs on the server.
      where: { state: "ready", gradedAtEnd: false },
      select: { id: true, lastActivityAt: true, idleMinutes: true, cohort: { select: { idleMinutes: true } } },
    });
    const idle = ready.filter((s) => {
      const minutes = s.cohort ? s.cohort.idleMinutes : s.idleMinutes;
      const idleMs = minutes != null ? minutes * 60_000 : options.idleMs;
      return idleMs > 0 && now.getTime() - s.lastActivityAt.getTime() > idleMs;
    });
    for (const { id } of idle) {
      try {
        // Terminals close first: a learner typing into a shell that is going away loses nothing silently.
        options.onOver?.(id, "suspended");
        if (await suspendSession(db, provider, id)) report.suspended.push(id);
      } catch (error) {
        options.onError?.(id, error as Error);
      }
    }
  }
  return report;
}

/** SSH endpoint of a machine of a ready session (machines on), or null. */
export async function machineEndpoint(db: Db, sessionId: string, name: string): Promise<SshEndpoint | null> {
  const machine = await db.machine.findFirst({
    where: { sessionId, name, session: { state: { in: ["starting", "ready"] } } },
  });
  if (!machine) return null;
  // A row from before keys were encrypted is sealed now; failing to do so does not stop SSH.
  await sealIfPlain(db, machine.id, machine.privateKey).catch(() => undefined);
  return {
    name: machine.name,
    host: machine.host,
    port: machine.port,
    user: machine.user,
    privateKey: openPrivateKey(machine.privateKey),
    hostKey: machine.hostKey,
  };
}

/** Whether a ready session's machine is powered off (guest poweroff, crash), as its provider sees it. */
export async function machinePoweredOff(db: Db, provider: MachineProvider, sessionId: string, name: string): Promise<boolean> {
  if (!provider.health) return false;
  const machine = await db.machine.findFirst({ where: { sessionId, name, session: { state: "ready" } } });
  if (!machine) return false;
  const [health] = await provider.health(sessionId, [machine]);
  return health?.state === "stopped";
}

/** How long the guest gets to accept a reboot request over SSH, in seconds (the connection drops as it goes down). */
const REBOOT_REQUEST_TIMEOUT_S = 20;

/**
 * Reboots a ready session's running machine the way its learner would: `systemctl reboot` over
 * SSH, a clean shutdown that flushes what they wrote (a hard reset could lose a file written a
 * moment ago and fail a correct fix). Resolves once the request is accepted, not when the machine
 * is back; false when the machine does not exist or refused the request.
 */
export async function requestReboot(db: Db, pool: SshExecPool, sessionId: string, name: string): Promise<boolean> {
  const endpoint = await db.labSession
    .count({ where: { id: sessionId, state: "ready" } })
    .then((n) => (n === 1 ? machineEndpoint(db, sessionId, name) : null));
  if (!endpoint) return false;
  // The reboot runs detached so the exec channel can answer before sshd goes away.
  const result = await pool.run(
    endpoint,
    "/usr/bin/systemd-run --no-block --on-active=1 /usr/bin/systemctl reboot >/dev/null 2>&1 || /usr/bin/systemctl --no-block reboot\n",
    REBOOT_REQUEST_TIMEOUT_S,
  );
  pool.close(endpoint);
  return result.outcome === "pass";
}

/**
 * Powers a ready session's machine on again (after a poweroff or crash) or hard-resets it;
 * resolves when it answers SSH. False when the provider cannot or the machine does not exist.
 */
export async function restartMachine(db: Db, provider: MachineProvider, sessionId: string, name: string): Promise<boolean> {
  if (!provider.reboot) return false;
  const machine = await db.machine.findFirst({ where: { sessionId, name, session: { state: "ready" } } });
  if (!machine) return false;
  await provider.reboot(sessionId, machine);
  return true;
}

/**
 * Puts a ready session's machine back to the lab's start: the provider restores the state saved
 * after the lab's setup, or gives a fresh disk and `prepare` (the lab's setup for that machine)
 * runs. Progress is not touched: steps done stay done. False when the provider cannot reset or
 * the machine does not exist.
 */
export async function resetMachine(
  db: Db,
  provider: MachineProvider,
  sessionId: string,
  name: string,
  prepare?: () => Promise<void>,
): Promise<boolean> {
  if (!provider.reset) return false;
  const machine = await db.machine.findFirst({ where: { sessionId, name, session: { state: "ready" } } });
  if (!machine) return false;
  const { atLabStart } = await provider.reset(sessionId, machine);
  if (!atLabStart) await prepare?.();
  return true;
}

/** Provider handles of live sessions' machines (static host groups in use). */
export async function providerRefsInUse(db: Db, provider: string): Promise<Set<string>> {
  const rows = await db.machine.findMany({
    where: { session: { provider, state: { not: "ended" } } },
    select: { providerRef: true },
    distinct: ["providerRef"],
  });
  return new Set(rows.map((r) => r.providerRef));
}

function view(session: {
  id: string;
  labSlug: string;
  learnerId: string;
  expiresAt: Date | null;
  machines: { name: string }[];
}): SessionView {
  return {
    id: session.id,
    labSlug: session.labSlug,
    learnerId: session.learnerId,
    machines: session.machines.map((m) => m.name),
    expiresAt: session.expiresAt,
  };
}
