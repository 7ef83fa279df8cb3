/**
 * Names and bounds of a machine's shells (server/sessions/tabs.ts), shared by the server and the
 * browser (no imports): the first shell of a machine is #1, extra tabs are #2, #3…
 */

/** Shells open at once per machine, the first one included: enough to watch `kubectl get -w` beside two more. */
export const MAX_SHELLS_PER_MACHINE = 4;
/**
 * Highest tab number per machine in one session. Numbers are not reused, and each closed tab's
 * output log stays in the machine's holder (up to 2 MiB of RAM and 32 MiB of disk each) until it
 * restarts: this bounds what opening and closing tabs can leave there.
 */
export const MAX_TAB_NUMBER = 32;

/** One open shell of a session, as the browser lists it. */
export interface TabView {
  machine: string;
  /** 1 for the machine's first shell, 2.. for extra tabs. */
  number: number;
}

/** The holder's tab name (holderTerminalId's second part): "main" for #1, as before tabs existed. */
export function holderTabName(number: number): string {
  return number === 1 ? "main" : `tab${number}`;
}

/** The terminal's name in recordings and the registry: `node01`, `node01#2`. */
export function terminalName(machine: string, number: number): string {
  return number === 1 ? machine : `${machine}#${number}`;
}

/** The machine a terminal's name (terminalName) belongs to: `node01` for `node01` and `node01#2`. */
export function terminalMachine(name: string): string {
  return name.replace(/#\d+$/, "");
}
