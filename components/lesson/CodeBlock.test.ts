import { NextIntlClientProvider } from "next-intl";
import { createElement, type ReactNode } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { MachineSwitchProvider, toKeystrokes } from "@/components/lesson/machine-switch";
import { MESSAGES } from "@/server/i18n/locale";
import { Lesson } from "./Lesson";

const LESSON = [
  "```bash run=node01",
  "echo こんにちは > /root/hello.txt",
  "```",
  "",
  "```bash title=x run=node02",
  "hostname",
  "```",
  "",
  "```bash run=node09",
  "uptime",
  "```",
  "",
  "```bash",
  "date",
  "```",
].join("\n");

/** Rendered in Japanese, the default language, as the app does. */
function inJapanese(children: ReactNode) {
  return createElement(NextIntlClientProvider, { locale: "ja", messages: MESSAGES.ja, timeZone: "Asia/Tokyo", children });
}

function render(machines: string[] | undefined): string {
  const lesson = createElement(Lesson, { markdown: LESSON });
  if (machines === undefined) return renderToStaticMarkup(inJapanese(lesson));
  return renderToStaticMarkup(
    inJapanese(createElement(MachineSwitchProvider, { value: { machines, select: () => {} }, children: lesson })),
  );
}

describe("run-in-machine buttons", () => {
  it("appear for fences whose meta names a machine of the lab, wherever run= sits in the meta", () => {
    const html = render(["controlplane", "node01", "node02"]);
    expect(html).toContain('data-run-machine="node01"');
    expect(html).toContain("node01 で実行");
    expect(html).toContain('data-run-machine="node02"');
    expect(html.match(/data-run-machine=/g)).toHaveLength(2); // not node09, not the plain block
    expect(html.match(/data-copy-state=/g)).toHaveLength(4);
  });

  it("do not appear outside a lab page (no machines)", () => {
    expect(render(undefined)).not.toContain("data-run-machine");
  });
});

describe("toKeystrokes", () => {
  it("ends every line with Enter (CR)", () => {
    expect(toKeystrokes("hostname")).toBe("hostname\r");
    expect(toKeystrokes("a\nb\n")).toBe("a\rb\r");
    expect(toKeystrokes("a\r\nb")).toBe("a\rb\r");
  });
});
