/** The paste decision of the lab terminal's clipboard (the keys and events in Chromium: e2e/workspace.spec.ts). */
import { describe, expect, it } from "vitest";
import { needsPasteConfirmation, PASTE_CONFIRM_CHARS, PASTE_CONFIRM_LINES, PasteOrder, pasteLines } from "./clipboard";

describe("paste", () => {
  it("counts lines as typed: CRLF and CR are line ends, a trailing one starts no line", () => {
    expect(pasteLines("")).toBe(0);
    expect(pasteLines("ls")).toBe(1);
    expect(pasteLines("ls\n")).toBe(1);
    expect(pasteLines("a\r\nb\rc\n")).toBe(3);
    expect(pasteLines("a\n\nb")).toBe(3);
  });

  it("asks first above the line or size limit, not for a short script", () => {
    const lines = (n: number) => Array.from({ length: n }, (_, i) => `echo ${i}`).join("\n") + "\n";
    expect(needsPasteConfirmation(lines(PASTE_CONFIRM_LINES))).toBe(false);
    expect(needsPasteConfirmation(lines(PASTE_CONFIRM_LINES + 1))).toBe(true);
    expect(needsPasteConfirmation("x".repeat(PASTE_CONFIRM_CHARS))).toBe(false);
    expect(needsPasteConfirmation("x".repeat(PASTE_CONFIRM_CHARS + 1))).toBe(true);
  });
});

describe("input around a pending paste", () => {
  it("keys typed while the clipboard is read follow the pasted text; a refused read lets them through", async () => {
    const sent: string[] = [];
    const order = new PasteOrder((d) => sent.push(d));
    order.input("echo ");
    let resolve!: (text: string) => void;
    order.hold(
      new Promise<string>((r) => (resolve = r)),
      (text) => order.input(text),
      () => undefined,
    );
    order.input("\r"); // Enter pressed at once after Ctrl+Shift+V
    expect(sent).toEqual(["echo "]);
    resolve("COPY-ME");
    await new Promise((r) => setTimeout(r, 0));
    expect(sent).toEqual(["echo ", "COPY-ME", "\r"]);

    const errors: unknown[] = [];
    order.hold(
      Promise.reject(new Error("denied")),
      () => undefined,
      (e) => errors.push(e),
    );
    order.input("x");
    await new Promise((r) => setTimeout(r, 0));
    expect(sent.at(-1)).toBe("x");
    expect(errors).toHaveLength(1);
  });
});
