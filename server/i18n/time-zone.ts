/**
 * The platform's one time zone and every date format of the UI. Every displayed time is
 * formatted by next-intl with the zone and the named formats below (i18n/request.ts passes both;
 * NextIntlClientProvider hands them to client components), so server pages and client components
 * agree whatever zone the browser is in. Date inputs (datetime-local) are read and shown back
 * in the platform zone with zonedInputToUtc / utcToZonedInput; dates are stored in UTC.
 * Imported by the browser too: nothing here may touch node: modules.
 */
import { TZDate, tzOffset } from "@date-fns/tz";
import type { Formats } from "next-intl";

/** This course runs in Japan. */
export const DEFAULT_TIME_ZONE = "Asia/Tokyo";

/** An IANA name ("Area/Location", "UTC"); excludes offsets ("+09:00") and abbreviations ("JST"), which Intl also accepts. */
const IANA_NAME = /^(UTC|[a-z][a-z_-]+(\/[a-z0-9_+-]+){1,2})$/i;

/** An IANA time zone name with its case fixed ("asia/tokyo" -> "Asia/Tokyo"), or null when it is not one this runtime knows. */
export function canonicalTimeZone(name: string): string | null {
  if (!IANA_NAME.test(name)) return null;
  try {
    const resolved = new Intl.DateTimeFormat("en", { timeZone: name }).resolvedOptions().timeZone;
    // ICU resolves some names to older aliases (America/Argentina/Buenos_Aires -> America/Buenos_Aires): keep the given one, fixing only its case.
    return resolved.toLowerCase() === name.toLowerCase() ? resolved : name;
  } catch {
    return null;
  }
}

/**
 * next-intl's named formats: every time the UI shows goes through one of these (24-hour
 * everywhere: `hourCycle: "h23"` overrides the locale's 12-hour default, e.g. English; hours
 * always two digits, as ja's timeStyle would print 9:05).
 */
export const DATE_TIME_FORMATS = {
  dateTime: {
    /** 2026/12/01 09:05 (en: 12/01/2026, 09:05) */
    dateTime: { year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", hourCycle: "h23" },
    /** 2026/12/01 (en: Dec 1, 2026) */
    date: { dateStyle: "medium" },
    /** 09:05 */
    time: { hour: "2-digit", minute: "2-digit", hourCycle: "h23" },
    /** 09:05:09 */
    timeSeconds: { hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" },
  },
} satisfies Formats;

export type DateTimeFormatName = keyof (typeof DATE_TIME_FORMATS)["dateTime"];

/** The zone's short name at `at` in `locale` ("JST"; English says "GMT+9" for Tokyo, "EST"/"EDT" for New York). */
export function timeZoneAbbreviation(timeZone: string, locale: string, at: Date = new Date()): string {
  const part = new Intl.DateTimeFormat(locale, { timeZone, timeZoneName: "short" })
    .formatToParts(at)
    .find((p) => p.type === "timeZoneName");
  return part?.value ?? timeZone;
}

/** What a datetime-local input holds: "2026-12-01T09:00" (seconds allowed). */
const LOCAL_INPUT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/;

/** Offsets can change at most once within this many ms either side of a wall time (DST, a zone's rule change). */
const OFFSET_SEARCH_MS = 24 * 3_600_000;

/**
 * The instant a datetime-local value names in `timeZone`, disambiguated as Temporal's
 * "compatible" mode does: a wall time that occurs twice (when DST ends) is the first of the two;
 * one that does not exist (the hour skipped when DST starts) moves forward by the gap. The
 * offsets come from the zone data (@date-fns/tz); the candidates are the offsets in force a day
 * before and a day after. Null when the value is not a valid datetime-local value.
 */
export function zonedInputToUtc(value: string, timeZone: string): Date | null {
  const m = LOCAL_INPUT.exec(value);
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1).map((p) => Number(p ?? 0)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59) return null;
  const wall = Date.UTC(year, month - 1, day, hour, minute, second);
  // Day 31 of a 30-day month rolls over into the next month: not a date the input can hold.
  if (new Date(wall).getUTCDate() !== day) return null;
  const before = tzOffset(timeZone, new Date(wall - OFFSET_SEARCH_MS));
  const after = tzOffset(timeZone, new Date(wall + OFFSET_SEARCH_MS));
  const candidates = [...new Set([before, after])]
    .map((offsetMinutes) => wall - offsetMinutes * 60_000)
    .filter((t) => wallClock(t, timeZone) === wall)
    .sort((a, b) => a - b);
  // No candidate: the wall time lies in a gap; the offset from before the gap moves it forward.
  return new Date(candidates[0] ?? wall - before * 60_000);
}

/** The wall-clock time of instant `t` in `timeZone`, as if it were UTC (ms). */
function wallClock(t: number, timeZone: string): number {
  const d = new TZDate(t, timeZone);
  return Date.UTC(d.getFullYear(), d.getMonth(), d.getDate(), d.getHours(), d.getMinutes(), d.getSeconds());
}

/** The datetime-local value ("2026-12-01T09:00") showing `date` in `timeZone`. */
export function utcToZonedInput(date: Date | string, timeZone: string): string {
  const d = new TZDate(new Date(date).getTime(), timeZone);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/**
 * An instant as plain text for a console line in the platform zone, as the UI shows times:
 * "2026-12-05 22:10 JST". The zone's short name is its named one where a locale has it (ja says
 * "JST", en "EST"), else the offset ("GMT+1").
 */
export function zonedConsoleTime(date: Date, timeZone: string): string {
  const names = ["ja", "en"].map((locale) => timeZoneAbbreviation(timeZone, locale, date));
  const name = names.find((n) => !/^GMT[+-]/.test(n)) ?? names[0]!;
  return `${utcToZonedInput(date, timeZone).replace("T", " ")} ${name}`;
}
