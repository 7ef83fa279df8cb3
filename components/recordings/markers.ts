/** Step markers of a terminal recording (asciicast v2), as the replay page lists them (RecordingPlayer.tsx). */
export interface Marker {
  time: number;
  label: string;
}

/** Idle time the player keeps of a longer pause between two events, s (asciinema-player's `idleTimeLimit`). */
export const IDLE_TIME_LIMIT_S = 2;

/**
 * The "m" events of an asciicast v2 file, in order (the player numbers its markers the same way),
 * at their time on the player's timeline: every pause between events beyond IDLE_TIME_LIMIT_S is
 * cut to it, as the player does, so the list and the player's clock agree (a marker's time in the
 * file was up to seconds later than where the player jumped when the learner had paused before it).
 */
export function markersOf(cast: string, idleTimeLimit = IDLE_TIME_LIMIT_S): Marker[] {
  const markers: Marker[] = [];
  let previous = 0;
  let shift = 0;
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
    if (event[1] === "m") markers.push({ time: at - shift, label: String(event[2]) });
  }
  return markers;
}
