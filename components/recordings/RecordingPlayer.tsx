"use client";
/**
 * Replays a lab session's terminal recordings (asciicast v2 from GET /api/sessions/:id/recordings/:machine)
 * in asciinema-player, one machine at a time, with the step markers as a list to jump to (the
 * player also shows the notices' markers, reboots and reconnects, on its timeline). The
 * player is loaded in the browser only (it touches the DOM at import) and runs its terminal
 * emulator as WebAssembly, which the replay page's CSP allows ('wasm-unsafe-eval'; no JS eval).
 */
import "asciinema-player/dist/bundle/asciinema-player.css";
import type { Player } from "asciinema-player";
import { useTranslations } from "next-intl";
import { useEffect, useRef, useState } from "react";
import { IDLE_TIME_LIMIT_S, markersOf, type Marker } from "./markers";

export interface RecordingInfo {
  machine: string;
  truncated: boolean;
}

function formatTime(seconds: number): string {
  const s = Math.floor(seconds);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

export function RecordingPlayer(props: {
  sessionId: string;
  recordings: RecordingInfo[];
  /** The machine shown first, when it has a recording (else the first). */
  initialMachine?: string;
  /** A marker's label to start at, once, on the first recording loaded (`task:<id>`, an exam task). */
  jumpTo?: string;
}) {
  const { sessionId, recordings } = props;
  const t = useTranslations("recording");
  const [machine, setMachine] = useState(recordings.find((r) => r.machine === props.initialMachine)?.machine ?? recordings[0]?.machine);
  const pendingJump = useRef(props.jumpTo);
  const [markers, setMarkers] = useState<Marker[]>([]);
  const [status, setStatus] = useState<"loading" | "ready" | "failed">("loading");
  const [position, setPosition] = useState<number | null>(null);
  const container = useRef<HTMLDivElement>(null);
  const player = useRef<Player | null>(null);

  useEffect(() => {
    if (!machine || !container.current) return;
    const element = container.current;
    let disposed = false;
    // A tab left before its cast arrived stops its download: the server runs only a few per user.
    const download = new AbortController();
    setStatus("loading");
    setMarkers([]);
    setPosition(null);
    void (async () => {
      try {
        const response = await fetch(`/api/sessions/${encodeURIComponent(sessionId)}/recordings/${encodeURIComponent(machine)}`, {
          signal: download.signal,
        });
        if (!response.ok) throw new Error(String(response.status));
        const cast = await response.text();
        const { create } = await import("asciinema-player");
        if (disposed) return;
        player.current = create({ data: cast }, element, { fit: "width", idleTimeLimit: IDLE_TIME_LIMIT_S, terminalFontSize: "small" });
        player.current.addEventListener("marker", ({ time }) => setPosition(time));
        const found = markersOf(cast);
        setMarkers(found);
        setStatus("ready");
        const start = found.find((m) => m.label === pendingJump.current);
        pendingJump.current = undefined;
        // A failed seek leaves the player at the start, still usable.
        if (start) void jumpOn(player.current, start.index).catch(() => undefined);
      } catch {
        if (!disposed) setStatus("failed");
      }
    })();
    return () => {
      disposed = true;
      download.abort();
      player.current?.dispose();
      player.current = null;
    };
  }, [sessionId, machine]);

  /** `index`: the marker's number among all of the file's markers (markersOf), as the player counts them. */
  async function jumpOn(p: Player | null, index: number) {
    if (!p) return;
    await p.seek({ marker: index });
    setPosition(p.getCurrentTime());
  }
  const jump = (index: number) => jumpOn(player.current, index);

  const current = recordings.find((r) => r.machine === machine);
  return (
    <div className="flex min-h-0 flex-1 gap-4 p-4" data-testid="replay" data-status={status} data-position={position ?? ""}>
      <div className="flex min-w-0 flex-1 flex-col gap-2">
        <div className="flex gap-1" role="tablist">
          {recordings.map((r) => (
            <button
              key={r.machine}
              type="button"
              role="tab"
              aria-selected={r.machine === machine}
              onClick={() => setMachine(r.machine)}
              className={`rounded-t px-3 py-1 text-sm ${r.machine === machine ? "bg-slate-800 text-white" : "bg-slate-200 text-slate-700 hover:bg-slate-300"}`}
            >
              {r.machine}
            </button>
          ))}
        </div>
        {status === "loading" && <p className="text-sm text-slate-500">{t("loading")}</p>}
        {status === "failed" && <p className="text-sm text-red-700">{t("failed")}</p>}
        {current?.truncated && <p className="text-xs text-amber-800">{t("truncated")}</p>}
        <div ref={container} className="min-h-0" data-testid="replay-player" />
      </div>
      <MarkerList markers={markers} ready={status === "ready"} onJump={(index) => void jump(index)} />
    </div>
  );
}

/** The recording's step (and exam task) markers, each a button that moves the player to it. */
function MarkerList({ markers, ready, onJump }: { markers: Marker[]; ready: boolean; onJump(index: number): void }) {
  const t = useTranslations("recording");
  return (
    <aside className="w-72 shrink-0">
      <h2 className="mb-2 text-sm font-semibold">{t("markers")}</h2>
      {markers.length === 0 && ready && <p className="text-xs text-slate-500">{t("noMarkers")}</p>}
      <ol className="space-y-1">
        {markers.map((m, i) => (
          <li key={`${i}-${m.time}`}>
            <button
              type="button"
              onClick={() => onJump(m.index)}
              data-testid="replay-marker"
              data-time={m.time}
              className="w-full rounded px-2 py-1 text-left text-xs hover:bg-sky-50"
            >
              <span className="mr-2 font-mono text-slate-500">{formatTime(m.time)}</span>
              {m.label}
            </button>
          </li>
        ))}
      </ol>
    </aside>
  );
}
