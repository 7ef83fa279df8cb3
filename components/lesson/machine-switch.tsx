"use client";
/**
 * What a lesson may ask of the page around it: switch to a machine's terminal, type into it, open
 * a preview. The lab workspace (components/lab/LabWorkspace.tsx) owns which machine's terminal is
 * shown and provides this context; the lesson's and steps' code blocks and links use it.
 */
import { createContext, useContext, type ReactNode } from "react";

export type MachineSwitch = {
  /** The lab's machines, in tab order. */
  machines: readonly string[];
  /** Shows a machine's terminal tab. */
  select(machine: string): void;
  /** The web preview's entry URL of `http://<machine>:<port><path>` of the learner's session (lesson links). */
  previewUrl?(machine: string, port: number, path: string): string;
};

const MachineSwitchContext = createContext<MachineSwitch | null>(null);

/** The page's machine switch, if any (lesson links ask it for preview URLs). */
export function useMachineSwitch(): MachineSwitch | null {
  return useContext(MachineSwitchContext);
}

export function MachineSwitchProvider({ value, children }: { value: MachineSwitch; children: ReactNode }) {
  return <MachineSwitchContext value={value}>{children}</MachineSwitchContext>;
}

/**
 * A function that shows `machine`'s terminal and types `text` into its shell followed by Enter,
 * as if the learner had typed it; it returns false when that terminal is not mounted yet.
 * Undefined when the page has no such machine (or no terminals at all), so callers render no
 * button for it.
 */
export function useRunInMachine(machine: string | undefined): ((text: string) => boolean) | undefined {
  const machineSwitch = useContext(MachineSwitchContext);
  if (machine === undefined || !machineSwitch?.machines.includes(machine)) return undefined;
  return (text) => {
    const terminal = window.__labdeck?.terminals[machine];
    if (!terminal) return false;
    machineSwitch.select(machine);
    terminal.type(toKeystrokes(text));
    // After the switch's render the terminal is visible and can take focus (as on a tab click),
    // so the learner can go on typing there.
    requestAnimationFrame(() => terminal.focus());
    return true;
  };
}

/**
 * Keystrokes for a block of commands: every line ends with Enter. Enter is CR, which is what the
 * key and xterm's own paste send; a bare LF is Ctrl-J, which programs reading the terminal in raw
 * mode (editors, some prompts) do not take as Enter.
 */
export function toKeystrokes(text: string): string {
  return text.replace(/\r?\n$/, "").replace(/\r?\n/g, "\r") + "\r";
}
