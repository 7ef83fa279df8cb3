/** The platform zone's conversions of datetime-local values, in a zone without DST and in one around both transitions. */
import { createFormatter } from "next-intl";
import { describe, expect, it } from "vitest";
import {
  canonicalTimeZone,
  DATE_TIME_FORMATS,
  timeZoneAbbreviation,
  utcToZonedInput,
  zonedConsoleTime,
  zonedInputToUtc,
} from "./time-zone";

describe("zonedInputToUtc / utcToZonedInput", () => {
  it("reads JST wall time as UTC+9 all year (no DST)", () => {
    expect(zonedInputToUtc("2026-12-01T09:00", "Asia/Tokyo")?.toISOString()).toBe("2026-12-01T00:00:00.000Z");
    expect(zonedInputToUtc("2026-07-01T09:00", "Asia/Tokyo")?.toISOString()).toBe("2026-07-01T00:00:00.000Z");
    // Crossing midnight backwards into the previous UTC day (and year).
    expect(zonedInputToUtc("2027-01-01T08:59", "Asia/Tokyo")?.toISOString()).toBe("2026-12-31T23:59:00.000Z");
    expect(utcToZonedInput("2026-12-31T23:59:00.000Z", "Asia/Tokyo")).toBe("2027-01-01T08:59");
  });

  it("does not depend on the zone of the process running it", () => {
    // The test runner's zone is whatever the machine has; the result names the instant in the given zone.
    const utc = zonedInputToUtc("2026-12-01T09:00", "Asia/Tokyo")!;
    expect(utc.getTime()).toBe(Date.UTC(2026, 11, 1, 0, 0));
  });

  it("follows New York's offset on either side of the DST start (2026-03-08 02:00 EST -> 03:00 EDT)", () => {
    expect(zonedInputToUtc("2026-03-08T01:59", "America/New_York")?.toISOString()).toBe("2026-03-08T06:59:00.000Z"); // EST, UTC-5
    expect(zonedInputToUtc("2026-03-08T03:00", "America/New_York")?.toISOString()).toBe("2026-03-08T07:00:00.000Z"); // EDT, UTC-4
    // 02:30 does not exist that night: it moves forward by the gap, to 03:30 EDT.
    expect(zonedInputToUtc("2026-03-08T02:30", "America/New_York")?.toISOString()).toBe("2026-03-08T07:30:00.000Z");
    expect(utcToZonedInput("2026-03-08T06:59:00.000Z", "America/New_York")).toBe("2026-03-08T01:59");
    expect(utcToZonedInput("2026-03-08T07:00:00.000Z", "America/New_York")).toBe("2026-03-08T03:00");
  });

  it("takes the first of the twice-occurring hour at the DST end (2026-11-01 02:00 EDT -> 01:00 EST)", () => {
    expect(zonedInputToUtc("2026-11-01T00:30", "America/New_York")?.toISOString()).toBe("2026-11-01T04:30:00.000Z");
    expect(zonedInputToUtc("2026-11-01T01:30", "America/New_York")?.toISOString()).toBe("2026-11-01T05:30:00.000Z"); // EDT
    expect(zonedInputToUtc("2026-11-01T02:30", "America/New_York")?.toISOString()).toBe("2026-11-01T07:30:00.000Z"); // EST
    // Both 01:30s show back as 01:30.
    expect(utcToZonedInput("2026-11-01T05:30:00.000Z", "America/New_York")).toBe("2026-11-01T01:30");
    expect(utcToZonedInput("2026-11-01T06:30:00.000Z", "America/New_York")).toBe("2026-11-01T01:30");
  });

  it("round-trips every hour of a DST year", () => {
    for (let t = Date.UTC(2026, 0, 1); t < Date.UTC(2027, 0, 1); t += 3_600_000) {
      const shown = utcToZonedInput(new Date(t), "Europe/Berlin");
      const back = zonedInputToUtc(shown, "Europe/Berlin")!.getTime();
      // The only hour that does not come back is the second of the repeated hour in October.
      if (back !== t) expect(t - back).toBe(3_600_000);
    }
  });

  it.each(["", "2026-12-01", "2026-12-01 09:00", "2026-13-01T09:00", "2026-02-30T09:00", "2026-12-01T24:00", "yesterday"])(
    "refuses %j",
    (value) => {
      expect(zonedInputToUtc(value, "Asia/Tokyo")).toBeNull();
    },
  );
});

describe("canonicalTimeZone", () => {
  it("accepts IANA names and refuses offsets, abbreviations and unknown zones", () => {
    expect(canonicalTimeZone("Asia/Tokyo")).toBe("Asia/Tokyo");
    expect(canonicalTimeZone("America/Argentina/Buenos_Aires")).toBe("America/Argentina/Buenos_Aires");
    expect(canonicalTimeZone("UTC")).toBe("UTC");
    for (const bad of ["JST", "EST", "+09:00", "Mars/Base", "", "Asia/Tokyo; DROP"]) expect(canonicalTimeZone(bad)).toBeNull();
  });

  it("names JST in Japanese", () => {
    expect(timeZoneAbbreviation("Asia/Tokyo", "ja")).toBe("JST");
  });
});

describe("DATE_TIME_FORMATS", () => {
  const at = new Date("2026-12-01T08:39:42Z");
  it.each(["ja", "en"])("shows 24-hour times in the platform zone (%s)", (locale) => {
    const format = createFormatter({ locale, timeZone: "Asia/Tokyo", formats: DATE_TIME_FORMATS });
    expect(format.dateTime(at, "timeSeconds")).toBe("17:39:42");
    expect(format.dateTime(at, "time")).toBe("17:39");
    expect(format.dateTime(at, "dateTime")).toMatch(/2026.+17:39$/);
    expect(format.dateTime(new Date("2026-12-01T00:05:09Z"), "timeSeconds")).toBe("09:05:09");
    expect(format.dateTime(at, "dateTime")).not.toMatch(/AM|PM|午前|午後/);
  });
});

describe("the UI formats dates only through the named formats", () => {
  it("has no toLocale*String, Intl.DateTimeFormat or inline dateTime options in app/ and components/", async () => {
    const { readdir, readFile } = await import("node:fs/promises");
    const files = (
      await Promise.all(
        ["app", "components"].map((dir) => readdir(dir, { recursive: true }).then((names) => names.map((n) => `${dir}/${n}`))),
      )
    )
      .flat()
      .filter((f) => /\.tsx?$/.test(f) && !/\.test\.tsx?$/.test(f));
    expect(files.length).toBeGreaterThan(20);
    const offenders: string[] = [];
    for (const file of files) {
      const text = await readFile(file, "utf8");
      // Each of these would format in the browser's zone, or 12-hour in English.
      for (const pattern of [/\.toLocale(Date|Time)?String\(/, /Intl\.DateTimeFormat/, /\.dateTime\([^,()]+(\([^()]*\))?,\s*\{/]) {
        if (pattern.test(text)) offenders.push(`${file}: ${pattern}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});

describe("zonedConsoleTime", () => {
  it("writes an instant in the platform zone with the zone's short name, not in UTC", () => {
    expect(zonedConsoleTime(new Date("2026-12-05T13:10:42Z"), "Asia/Tokyo")).toBe("2026-12-05 22:10 JST");
    // Past midnight there: the date is Tokyo's, not UTC's.
    expect(zonedConsoleTime(new Date("2026-12-05T15:30:00Z"), "Asia/Tokyo")).toBe("2026-12-06 00:30 JST");
    expect(zonedConsoleTime(new Date("2026-07-01T12:00:00Z"), "America/New_York")).toBe("2026-07-01 08:00 EDT");
    expect(zonedConsoleTime(new Date("2026-12-05T13:10:00Z"), "UTC")).toBe("2026-12-05 13:10 UTC");
  });
});
