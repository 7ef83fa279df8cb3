import Markdown from "react-markdown";
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { joinCjkLines, remarkCjkBreaks } from "./remark-cjk-breaks";

describe("joinCjkLines", () => {
  it("drops a newline next to Japanese text", () => {
    expect(joinCjkLines("慣れます。\nあなた")).toBe("慣れます。あなた");
    expect(joinCjkLines("kubelet\nが起動")).toBe("kubeletが起動");
    expect(joinCjkLines("再実行します\n(`x`)")).toBe("再実行します(`x`)");
  });

  it("keeps a newline between Latin words", () => {
    expect(joinCjkLines("swap\noff")).toBe("swap\noff");
  });
});

describe("remarkCjkBreaks", () => {
  it("joins lines in paragraphs but leaves code blocks alone", () => {
    const md = "一行目\n二行目\n\n```\nあ\nい\n```\n";
    const html = renderToStaticMarkup(createElement(Markdown, { remarkPlugins: [remarkCjkBreaks] }, md));
    expect(html).toContain("<p>一行目二行目</p>");
    expect(html).toContain("あ\nい");
  });
});
