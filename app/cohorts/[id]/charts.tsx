/**
 * The dashboard's two pictures as plain SVG/Tailwind (no chart library): the funnel (learners
 * past each step) and the time-on-step heatmap (learners × steps, darker = longer).
 */
import { useLocale } from "next-intl";
import type { Dashboard, DashboardLearner } from "@/server/cohorts/dashboard";
import { formatDuration } from "@/server/i18n/duration";

/** Height of one funnel bar and the gap under it, in SVG units (px). */
const BAR = 18;
const GAP = 6;
const LABEL_WIDTH = 200;
/** Characters of a step title shown beside its bar (Japanese characters are wide: ~12 px at 11 px type). */
const LABEL_CHARS = 14;
const CHART_WIDTH = 520;

export function Funnel({ steps, counts, total }: { steps: Dashboard["steps"]; counts: number[]; total: number }) {
  const height = steps.length * (BAR + GAP);
  const barWidth = CHART_WIDTH - LABEL_WIDTH - 40;
  return (
    <svg viewBox={`0 0 ${CHART_WIDTH} ${height}`} className="mt-3 w-full" role="img" aria-label="funnel">
      {steps.map((s, i) => {
        const n = counts[i] ?? 0;
        const w = total > 0 ? (barWidth * n) / total : 0;
        const y = i * (BAR + GAP);
        return (
          <g key={s.id} data-step={s.id} data-count={n}>
            <title>{`${s.title}: ${n}/${total}`}</title>
            <text x={0} y={y + BAR - 5} fontSize={11} fill="#334155">
              {`${i + 1}. ${s.title.length > LABEL_CHARS ? `${s.title.slice(0, LABEL_CHARS - 1)}…` : s.title}`}
            </text>
            <rect x={LABEL_WIDTH} y={y} width={barWidth} height={BAR} rx={3} fill="#e2e8f0" />
            <rect x={LABEL_WIDTH} y={y} width={w} height={BAR} rx={3} fill="#10b981" />
            <text x={LABEL_WIDTH + barWidth + 6} y={y + BAR - 5} fontSize={11} fill="#0f172a">
              {`${n}/${total}`}
            </text>
          </g>
        );
      })}
    </svg>
  );
}

export function Heatmap({ steps, learners, now }: { steps: Dashboard["steps"]; learners: DashboardLearner[]; now: number }) {
  const locale = useLocale();
  // The current step's time grows live; done steps' times are fixed.
  const seconds = (l: DashboardLearner, i: number): number | null => {
    if (steps[i]?.id === l.currentStepId && l.currentSince && l.state !== "ended")
      return Math.max(0, Math.round((now - Date.parse(l.currentSince)) / 1000));
    return l.stepSeconds[i] ?? null;
  };
  const max = Math.max(60, ...learners.flatMap((l) => steps.map((_, i) => seconds(l, i) ?? 0)));
  return (
    <table className="mt-3 w-full text-xs">
      <thead>
        <tr>
          <th />
          {steps.map((s, i) => (
            <th key={s.id} className="font-normal text-slate-500" title={s.title}>
              {i + 1}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {learners.map((l) => (
          <tr key={l.userId}>
            <td className="pr-2 whitespace-nowrap">{l.name}</td>
            {steps.map((s, i) => {
              const v = seconds(l, i);
              const alpha = v === null ? 0 : 0.12 + (0.88 * v) / max;
              return (
                <td key={s.id} className="p-0.5">
                  <div
                    className="h-6 rounded-sm text-center leading-6"
                    style={{
                      backgroundColor: v === null ? "#f1f5f9" : `rgba(234, 88, 12, ${alpha.toFixed(2)})`,
                      color: alpha > 0.55 ? "white" : "#431407",
                    }}
                    title={v === null ? "" : formatDuration(v, locale)}
                    data-seconds={v ?? ""}
                  >
                    {v === null ? "" : Math.round(v / 60)}
                  </div>
                </td>
              );
            })}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
