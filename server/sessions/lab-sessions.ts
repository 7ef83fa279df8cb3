/**
 * Lab sessions: a learner's run of a lab and the machines it holds. Plain functions over the
 * database and a machine provider, called by the HTTP layer, the CLI and tests alike.
 */
import type { Db } from "../db/client";
import type { MachineProvider } from "../machines/provider";
import type { SshEndpoint } from "../terminal/ssh";

/** How long a request waits for a concurrent request that is starting the same session. */
const CONCURRENT_START_WAIT_MS = 120_000;
const CONCURRENT_START_POLL_MS = 250;

export interface SessionView {
  id: string;
  labSlug: string;
  learnerId: string;
  machines: string[];
}

/**
 * The learner's live session for a lab, or a new one with freshly provided machines. A provider
 * failure leaves no session behind.
 */
export async function startOrResumeSession(
  db: Db,
  provider: MachineProvider,
  request: { learnerId: string; labSlug: string; machines: readonly string[] },
  /** Prepares the new session's machines (lab setup scripts) before it counts as ready. */
  prepare?: (sessionId: string) => Promise<void>,
): Promise<SessionView> {
  const findLive = () =>
    db.labSession.findFirst({
      where: { learnerId: request.learnerId, labSlug: request.labSlug, state: { not: "ended" } },
      include: { machines: { select: { name: true } } },
    });
  for (let waited = 0; ; waited += CONCURRENT_START_POLL_MS) {
    const existing = await findLive();
    if (!existing) break;
    if (existing.state === "ready") return view(existing);
    // Another request is providing this learner's machines right now: wait for it.
    if (waited >= CONCURRENT_START_WAIT_MS) throw new Error("the lab session is still starting; try again");
    await new Promise((r) => setTimeout(r, CONCURRENT_START_POLL_MS));
  }

  let session;
  try {
    session = await db.labSession.create({
      data: { learnerId: request.learnerId, labSlug: request.labSlug, provider: provider.name },
    });
  } catch (error) {
    // The partial unique index "LabSession_live_per_learner_lab" lost us a race: use the winner's.
    if ((error as { code?: string }).code === "P2002") return startOrResumeSession(db, provider, request);
    throw error;
  }
  try {
    const machines = await provider.create({ sessionId: session.id, labSlug: request.labSlug, machines: request.machines });
    try {
      await db.machine.createMany({ data: machines.map((m) => ({ ...m, sessionId: session.id })) });
      await prepare?.(session.id);
    } catch (error) {
      await provider.destroy(session.id, machines).catch(() => undefined);
      throw error;
    }
    const ready = await db.labSession.update({
      where: { id: session.id },
      data: { state: "ready", currentStepSince: new Date() },
      include: { machines: { select: { name: true } } },
    });
    return view(ready);
  } catch (error) {
    await db.labSession.delete({ where: { id: session.id } }).catch(() => undefined);
    throw error;
  }
}

/** Ends a session: releases its machines. Ending is final. */
export async function endSession(db: Db, provider: MachineProvider, sessionId: string): Promise<void> {
  const session = await db.labSession.findUnique({ where: { id: sessionId }, include: { machines: true } });
  if (!session || session.state === "ended") return;
  await provider.destroy(sessionId, session.machines);
  await db.labSession.update({ where: { id: sessionId }, data: { state: "ended", endedAt: new Date() } });
}

/** SSH endpoint of a machine of a live session, or null. */
export async function machineEndpoint(db: Db, sessionId: string, name: string): Promise<SshEndpoint | null> {
  const machine = await db.machine.findFirst({
    where: { sessionId, name, session: { state: { not: "ended" } } },
  });
  if (!machine) return null;
  return {
    name: machine.name,
    host: machine.host,
    port: machine.port,
    user: machine.user,
    privateKey: machine.privateKey,
    hostKey: machine.hostKey,
  };
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

function view(session: { id: string; labSlug: string; learnerId: string; machines: { name: string }[] }): SessionView {
  return { id: session.id, labSlug: session.labSlug, learnerId: session.learnerId, machines: session.machines.map((m) => m.name) };
}
