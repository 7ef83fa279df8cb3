/**
 * A server process that holds the sweeper role, for server/leases/roles.db.test.ts: the real
 * SessionSweeper under the real SingletonRole on the database in DATABASE_URL, with a machine
 * provider at the far edge (teardowns succeed and touch nothing). Prints `held` once it has the
 * role, and sweeps until it is killed.
 *   DATABASE_URL=... tsx server/testing/sweeper-child.ts <leaseMs> <renewMs> <sweepMs>
 */
import { createDb } from "../db/client";
import { SingletonRole } from "../leases/roles";
import { log } from "../log";
import type { MachineProvider } from "../machines/provider";
import { machineEndpoint } from "../sessions/lab-sessions";
import { SessionSweeper } from "../sessions/sweeper";
import { TerminalRegistry } from "../terminal/registry";

const [leaseMs, renewMs, sweepMs] = process.argv.slice(2).map(Number);
const db = createDb(process.env.DATABASE_URL!);
const noMachines: MachineProvider = { name: "fake-none", create: async () => [], destroy: async () => {} };
const terminals = new TerminalRegistry((sid, machine) => machineEndpoint(db, sid, machine));
const sweeper = new SessionSweeper({ db, provider: noMachines, terminals, log }, { idleMs: 0, intervalMs: sweepMs });
const role = new SingletonRole(
  { db, log },
  "sweeper",
  {
    start: () => {
      sweeper.start();
      process.stdout.write("held\n");
    },
    stop: () => sweeper.stop(),
  },
  { holder: `child:${process.pid}`, leaseMs, renewMs },
);
role.start();
setInterval(() => {}, 1_000);
