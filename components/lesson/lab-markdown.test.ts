/**
 * Every lab's Markdown (lesson, step texts, hints) rendered exactly as the lab page renders it:
 * no literal `**` or `__` emphasis marker may reach the page. CommonMark alone leaves
 * `**「再起動した後も」**` as text next to Japanese punctuation; remark-cjk-friendly fixes it.
 */
import { NextIntlClientProvider } from "next-intl";
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { listLabs } from "../../server/labs/load";
import messages from "../../messages/ja.json";
import { LessonMarkdown } from "./Lesson";

const render = (markdown: string) =>
  renderToStaticMarkup(
    createElement(NextIntlClientProvider, {
      locale: "ja",
      messages,
      timeZone: "Asia/Tokyo",
      children: createElement(LessonMarkdown, { markdown }),
    }),
  );

/** The rendered text outside <code> and <pre>, where a `**` may be meant literally. */
function proseOf(html: string): string {
  return html.replace(/<pre[\s\S]*?<\/pre>/g, "").replace(/<code[\s\S]*?<\/code>/g, "");
}

describe("lab Markdown", () => {
  it("renders emphasis next to Japanese punctuation", () => {
    const html = render("これは**「再起動した後もその状態か」**が大事です。");
    expect(html).toContain("<strong>「再起動した後もその状態か」</strong>");
    expect(proseOf(html)).not.toContain("**");
  });

  it("leaves ** inside code alone", () => {
    expect(render("`a**b` と\n\n```\nx ** y\n```")).toContain("a**b");
  });

  it("every lab's lesson, step texts and hints render without a literal ** or __", async () => {
    const { labs, errors } = await listLabs("labs");
    expect(errors).toEqual([]);
    expect(labs.length).toBeGreaterThanOrEqual(4);
    const leaks: string[] = [];
    let emphasised = 0;
    for (const lab of labs) {
      const texts: [string, string][] = [
        [`${lab.slug}/lesson`, lab.lessonMarkdown],
        ...lab.steps.flatMap((s): [string, string][] => [
          [`${lab.slug}/steps/${s.id}/step.md`, s.textMarkdown],
          [`${lab.slug}/steps/${s.id}/hint.md`, s.hintMarkdown],
        ]),
      ];
      for (const [where, markdown] of texts) {
        const html = render(markdown);
        emphasised += (html.match(/<strong>/g) ?? []).length;
        for (const marker of ["**", "__"]) if (proseOf(html).includes(marker)) leaks.push(`${where}: ${marker}`);
      }
    }
    expect(leaks).toEqual([]);
    // The course uses emphasis; if none rendered, the test would prove nothing.
    expect(emphasised).toBeGreaterThan(10);
  });
});
