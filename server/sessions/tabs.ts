/**
 * Several shells per machine: a learner's extra terminal tabs (`controlplane #2`, `#3`…). The
 * first shell of a machine is #1 and always there; each extra one is a `TerminalTab` row, opened
 * and closed by the learner, and a durable terminal like the first: its shell lives in the
 * machine's holder under its own id (`holderTabName`), so it survives reloads, reconnects and
 * server restarts, and any process attaches to it. The rows are what a reload, another window or
 * a watcher reads the tab list from (the holder knows ids, not which are meant to be open, and a
 * machine that rebooted knows none). Numbers are never reused within a session and machine: each
 * names one holder terminal and one recording, so a new tab never shows an old tab's output.
 */
import { Denied } from "../denied";
import type { Db } from "../db/client";
import { machineEndpoint } from "./lab-sessions";
import type { SshEndpoint } from "../ssh/connect";
import { MAX_SHELLS_PER_MACHINE, MAX_TAB_NUMBER, type TabView } from "../terminal/tab-names";

/** The session's open extra tabs, by machine and number. */
export async function openTabs(db: Db, sessionId: string): Promise<TabView[]> {
  const rows = await db.terminalTab.findMany({
    where: { sessionId, closedAt: null },
    select: { machine: true, number: true },
    orderBy: [{ machine: "asc" }, { number: "asc" }],
  });
  return rows;
}

/**
 * Opens an extra tab on `machine`: the next number, while fewer than MAX_SHELLS_PER_MACHINE shells
 * are open there. One transaction that locks the session row, so concurrent requests (two
 * windows, two processes) never go past the bound. 404 noSuchMachine, 409 sessionNotLive /
 * tooManyShells / tabNumbersUsedUp.
 */
export async function openTab(db: Db, sessionId: string, machine: string): Promise<TabView> {
  return db.$transaction(async (tx) => {
    const [session] = await tx.$queryRaw<
      { state: string }[]
    >`SELECT "state"::text AS state FROM "LabSession" WHERE "id" = ${sessionId} FOR UPDATE`;
    if (!session) throw new Denied(404, "noSuchSession");
    if (session.state !== "ready") throw new Denied(409, "sessionNotLive");
    if ((await tx.machine.count({ where: { sessionId, name: machine } })) === 0) throw new Denied(404, "noSuchMachine");
    const open = await tx.terminalTab.count({ where: { sessionId, machine, closedAt: null } });
    if (open + 1 >= MAX_SHELLS_PER_MACHINE) throw new Denied(409, "tooManyShells");
    const last = await tx.terminalTab.aggregate({ where: { sessionId, machine }, _max: { number: true } });
    const number = (last._max.number ?? 1) + 1;
    if (number > MAX_TAB_NUMBER) throw new Denied(409, "tabNumbersUsedUp");
    await tx.terminalTab.create({ data: { sessionId, machine, number } });
    return { machine, number };
  });
}

/** Marks an open tab closed; false when there is no such open tab. */
export async function closeTab(db: Db, sessionId: string, machine: string, number: number): Promise<boolean> {
  const { count } = await db.terminalTab.updateMany({
    where: { sessionId, machine, number, closedAt: null },
    data: { closedAt: new Date() },
  });
  return count === 1;
}

/** Whether terminal `number` of a machine is one the learner has open (#1 always is). */
export async function tabIsOpen(db: Db, sessionId: string, machine: string, number: number): Promise<boolean> {
  if (number === 1) return true;
  return (await db.terminalTab.count({ where: { sessionId, machine, number, closedAt: null } })) === 1;
}

/** The SSH endpoint for a terminal: the machine's, while the tab is open; else null (as for no such machine). */
export async function terminalEndpoint(db: Db, sessionId: string, machine: string, number = 1): Promise<SshEndpoint | null> {
  if (!(await tabIsOpen(db, sessionId, machine, number))) return null;
  return machineEndpoint(db, sessionId, machine);
}
