/** Step markers of a terminal recording (asciicast v2), as the replay page lists them (RecordingPlayer.tsx). */
import { TerminalNotice } from "@/server/terminal/protocol";

export interface Marker {
  time: number;
  label: string;
  /** Its number among all the file's markers, notices' included: what the player seeks by. */
  index: number;
}

/** Idle time the player keeps of a longer pause between two events, s (asciinema-player's `idleTimeLimit`). */
export const IDLE_TIME_LIMIT_S = 2;

/**
 * The step markers among the "m" events of an asciicast v2 file, in order, each with its number
 * among all markers (the player numbers every "m" event, a notice's too: a reboot, a reconnect,
 * labelled by its TerminalNotice key, which is no step and is left out of the list), at their
 * time on the player's timeline: every pause between events beyond IDLE_TIME_LIMIT_S is cut to
 * it, as the player does, so the list and the player's clock agree (a marker's time in the file
 * was up to seconds later than where the player jumped when the learner had paused before it).
 */
export function markersOf(cast: string, idleTimeLimit = IDLE_TIME_LIMIT_S): Marker[] {
  const markers: Marker[] = [];
  let previous = 0;
  let shift = 0;
  let index = 0;
  for (const line of cast.split("\n").slice(1)) {
    if (!line.startsWith("[")) continue;
    let event: unknown;
    try {
      event = JSON.parse(line);
    } catch {
      continue; // a line the player will also skip
    }
    if (!Array.isArray(event) || typeof event[0] !== "number") continue;
    const at = event[0];
    shift += Math.max(0, at - previous - idleTimeLimit);
    previous = at;
    if (event[1] !== "m") continue;
    const label = String(event[2]);
    if (!TerminalNotice.safeParse(label).success) markers.push({ time: at - shift, label, index });
    index++;
  }
  return markers;
}
