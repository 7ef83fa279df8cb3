/**
 * Durations as durations ("16分26秒", "1 h 5 min"), never like a clock time ("16:26"), which a
 * page showing clock times next to them makes ambiguous. Shared by server and browser code.
 *
 * The units are a table, not Intl: Intl.DurationFormat is missing from Node 20, and
 * Intl.NumberFormat's unit names depend on the runtime's ICU data (Node's "16h" where a browser
 * says "16時間"), so the server's render and the browser's would differ.
 */
import { isLocale, type Locale } from "./locales";

const UNITS: Record<Locale, { h: string; min: string; s: string; gap: string; join: string }> = {
  ja: { h: "時間", min: "分", s: "秒", gap: "", join: "" },
  en: { h: "h", min: "min", s: "s", gap: " ", join: " " },
};

/**
 * A number of seconds as hours and minutes from an hour on ("1時間5分", "2時間"), minutes and
 * seconds below it ("16分26秒", "3分"), seconds below a minute ("45秒"). Fractions are dropped;
 * a negative duration reads as none ("0秒"). A locale other than ja or en gets en.
 */
export function formatDuration(seconds: number, locale: string): string {
  const u = UNITS[isLocale(locale) ? locale : "en"];
  const total = Math.max(0, Math.floor(Number.isFinite(seconds) ? seconds : 0));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const part = (n: number, unit: string) => `${n}${u.gap}${unit}`;
  if (h > 0) return m > 0 ? [part(h, u.h), part(m, u.min)].join(u.join) : part(h, u.h);
  if (m > 0) return s > 0 ? [part(m, u.min), part(s, u.s)].join(u.join) : part(m, u.min);
  return part(s, u.s);
}
