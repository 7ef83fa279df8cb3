/**
 * The exam's clock, as pure functions the countdown hook (useCountdown.ts) runs each second: time
 * left to the server's deadline on the server's clock (the page's clock may be minutes off), and
 * which "time is running out" alert is due.
 */

/** Minutes left at which the learner is alerted, each once per page, most urgent last. */
export const ALERT_MINUTES = [30, 15, 5] as const;
export type AlertMinutes = (typeof ALERT_MINUTES)[number];

const MINUTE_MS = 60_000;

/**
 * How far the server's clock is ahead of the page's, ms: the server's `serverNow` against the
 * middle of the request that brought it (the answer was made somewhere between sent and received).
 */
export function clockOffsetMs(serverNow: string, sentAtMs: number, receivedAtMs: number): number {
  const server = Date.parse(serverNow);
  return Number.isFinite(server) ? server - (sentAtMs + receivedAtMs) / 2 : 0;
}

/** Time left to `deadline` (ISO) on the server's clock, ms, never below 0. */
export function remainingMs(deadline: string, offsetMs: number, pageNowMs: number): number {
  const end = Date.parse(deadline);
  if (!Number.isFinite(end)) return 0;
  return Math.max(0, end - (pageNowMs + offsetMs));
}

/**
 * The alert due with `leftMs` to go, given those already shown: the most urgent threshold
 * crossed and not shown yet (a page opened with 12 minutes left says "under 15", not "under 30"
 * and then "under 15"), null when none. `shown` comes back with every crossed threshold in it,
 * so each alert is shown at most once.
 */
export function dueAlert(
  leftMs: number,
  shown: ReadonlySet<AlertMinutes>,
): { alert: AlertMinutes | null; shown: ReadonlySet<AlertMinutes> } {
  const crossed = ALERT_MINUTES.filter((minutes) => leftMs <= minutes * MINUTE_MS);
  const fresh = crossed.filter((minutes) => !shown.has(minutes));
  if (fresh.length === 0) return { alert: null, shown };
  return { alert: fresh[fresh.length - 1]!, shown: new Set([...shown, ...crossed]) };
}

/** Time left as a clock ("1:05:09", "29:59"), rounded up to the second, so 0:00 is the very end. */
export function clockText(leftMs: number): string {
  const total = Math.ceil(Math.max(0, leftMs) / 1000);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = String(total % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${s}` : `${m}:${s}`;
}
