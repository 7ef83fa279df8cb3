/**
 * What runs on a machine for a lab: every check, setup script and solution starts with the
 * platform's shell helpers (checklib.sh: boot-time sysctl, swap, modules, units), a check also
 * with its lab's own helpers.
 */
import fs from "node:fs";
import type { Lab, LoadedStep } from "./load";

/** Helpers put in front of every check (boot-time sysctl, swap, modules, units). */
export const CHECK_LIB = fs.readFileSync(new URL("./checklib.sh", import.meta.url), "utf8");

/** The script a step's check runs as: the platform's helpers, the lab's own, then the check. */
export function checkScript(lab: Pick<Lab, "checkLib">, step: Pick<LoadedStep, "check">): string {
  return `${CHECK_LIB}\n${lab.checkLib}\n${step.check.content}`;
}
