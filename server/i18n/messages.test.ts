/** Japanese and English messages have exactly the same keys, and every message compiles in ICU syntax. */
import { describe, expect, it } from "vitest";
import { createTranslator } from "next-intl";
import { MESSAGES } from "./locale";
import { LOCALES } from "./locales";

function keys(value: unknown, prefix = ""): string[] {
  if (typeof value !== "object" || value === null) return [prefix];
  return Object.entries(value).flatMap(([k, v]) => keys(v, prefix ? `${prefix}.${k}` : k));
}

describe("messages", () => {
  it("ja and en have the same keys", () => {
    const ja = keys(MESSAGES.ja).sort();
    const en = keys(MESSAGES.en).sort();
    expect(en.filter((k) => !ja.includes(k))).toEqual([]);
    expect(ja.filter((k) => !en.includes(k))).toEqual([]);
    expect(ja.length).toBeGreaterThan(100);
  });

  it("every message is non-empty and formats", () => {
    for (const locale of LOCALES) {
      const t = createTranslator({
        locale,
        messages: MESSAGES[locale],
        onError: (e) => {
          throw e;
        },
      });
      for (const key of keys(MESSAGES[locale])) {
        const text = (t as unknown as { raw(k: string): string }).raw(key);
        expect(text, `${locale}:${key}`).not.toBe("");
        expect(() =>
          t(
            key as never,
            {
              n: 1,
              done: 1,
              total: 2,
              machine: "m",
              status: 500,
              code: 1,
              reason: "r",
              email: "e",
              role: "r",
              min: 10,
              date: "d",
              kb: 256,
              time: "1:00",
              name: "n",
              names: "a, b",
              available: 1,
              ready: 1,
              size: 2,
              left: "in 3 hours",
              at: "18:00",
              cohort: "c",
              current: "x",
              line: 2,
              zone: "Asia/Tokyo",
              abbr: "JST",
              lab: "l",
              count: 3,
              error: "e",
              lines: 6,
              vcpus: 2,
              memory: 512,
              machines: 3,
              position: 1,
              detail: "d",
              seconds: 5,
              number: 2,
              max: 4,
              needed: 1024,
              free: 512,
              minutes: 10,
              variant: "v",
              command: "c",
              sources: "s",
              hash: "h",
            } as never,
          ),
        ).not.toThrow();
      }
    }
  });
});
