import { describe, expect, it } from "vitest";
import { markersOf } from "./markers";

const cast = (events: unknown[][]) =>
  [JSON.stringify({ version: 2, width: 80, height: 24 }), ...events.map((e) => JSON.stringify(e))].join("\n");

describe("markersOf", () => {
  it("lists the markers in order at the file's time when no pause is longer than the idle limit", () => {
    const markers = markersOf(
      cast([
        [0.5, "o", "$ "],
        [1.2, "m", "step one"],
        [2.0, "o", "x"],
        [3.1, "m", "step two"],
      ]),
    );
    expect(markers).toEqual([
      { time: 1.2, label: "step one", index: 0 },
      { time: 3.1, label: "step two", index: 1 },
    ]);
  });

  it("cuts every pause beyond the idle limit to it, as the player does, so a marker's time is where the player jumps", () => {
    // A learner paused 2.47 s before the step: the player's clock is 0.47 s behind the file's there
    // (e2e recording.spec compared the two and failed by that much).
    const markers = markersOf(
      cast([
        [0.1, "o", "$ "],
        [1.111, "o", "e"],
        [3.581, "m", "step"],
        [10.0, "o", "y"],
        [10.5, "m", "later"],
      ]),
      2,
    );
    expect(markers[0]!.time).toBeCloseTo(3.111, 6);
    expect(markers[1]!.time).toBeCloseTo(3.111 + 2 + 0.5, 6);
  });

  it("skips lines that are not events", () => {
    expect(markersOf(`${JSON.stringify({ version: 2 })}\nnot json\n[1, "m", "ok"]\n["x", "m", "bad time"]\n`)).toEqual([
      { time: 1, label: "ok", index: 0 },
    ]);
  });

  it("leaves the notices' markers (a reboot, a reconnect) out of the list and numbers the steps as the player numbers all markers", () => {
    const markers = markersOf(
      cast([
        [0.5, "o", "$ reboot\r\n$ "],
        [1.0, "o", "\r\n[node01 が再起動されました。新しいシェルです]\r\n"],
        [1.0, "m", "rebooted"],
        [1.5, "m", "✓ step one"],
        [2.0, "m", "reconnected"],
        [2.5, "m", "Check step two: fail"],
      ]),
    );
    expect(markers).toEqual([
      { time: 1.5, label: "✓ step one", index: 1 },
      { time: 2.5, label: "Check step two: fail", index: 3 },
    ]);
  });
});
