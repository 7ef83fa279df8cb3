/**
 * Prepares a new session's machines for its lab: runs each machine's setup scripts in order (as
 * the machine's SSH user, root), machines in parallel. A failing script fails the start with a
 * message naming the script and what it printed.
 */
import path from "node:path";
import { CHECK_LIB } from "./check-script";
import type { SshEndpoint } from "../ssh/connect";
import type { SshExecPool } from "../ssh/exec";
import type { Lab } from "./load";

/** Longest a single setup script may run, in seconds. */
export const SETUP_SCRIPT_TIMEOUT_S = 300;

export async function runLabSetup(
  pool: SshExecPool,
  lab: Lab,
  endpointOf: (machine: string) => Promise<SshEndpoint | null>,
  /** Only these machines (a reset machine); default all. */
  only?: readonly string[],
  /** Told before each script runs (the start's progress on the lab page); the function it may
   * return is called when that script has ended, passed or not. */
  onScript?: (machine: string, script: string) => (() => void) | void,
): Promise<void> {
  await Promise.all(
    Object.entries(lab.setup).filter(([machine]) => !only || only.includes(machine)).map(async ([machine, scripts]) => {
      const endpoint = await endpointOf(machine);
      if (!endpoint) throw new Error(`${lab.slug}: setup: the session has no machine ${machine}`);
      for (const script of scripts) {
        const ended = onScript?.(machine, path.basename(script.file));
        const result = await pool.run(endpoint, `${CHECK_LIB}\n${script.content}`, SETUP_SCRIPT_TIMEOUT_S).finally(() => ended?.());
        if (result.outcome !== "pass") {
          throw new Error(`${script.file} on ${machine}: ${result.outcome} (exit ${result.exitCode}): ${result.output}`);
        }
      }
    }),
  );
}
