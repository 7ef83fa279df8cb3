/** The guest's "SSH is up" line on the serial console, as real consoles print it (captured from CI-like runs). */
import { describe, expect, it } from "vitest";
import { hasReadyLine } from "./vm";

const UUID = "cb1fc844-4848-43ef-9b74-bdc29cbb18a6";

describe("ready line", () => {
  it("is found after the getty prompt on the same line, after kernel messages, or alone", () => {
    expect(hasReadyLine(`Debian GNU/Linux 12 controlplane ttyS0\r\n\r\ncontrolplane login: labdeck-ready ${UUID}\r\n`)).toBe(true);
    expect(
      hasReadyLine(`[  117.671737] platform regulatory.0: firmware: failed to load regulatory.db (-2)\r\nlabdeck-ready ${UUID}\r\n`),
    ).toBe(true);
    expect(hasReadyLine(`labdeck-ready ${UUID}`)).toBe(true);
  });

  it("is not found in a console without it, nor cut short (the line is still being written)", () => {
    expect(hasReadyLine("controlplane login: ")).toBe(false);
    expect(hasReadyLine(`labdeck-ready ${UUID.slice(0, 20)}`)).toBe(false);
    expect(hasReadyLine("labdeck-ready \r\n")).toBe(false);
  });
});
