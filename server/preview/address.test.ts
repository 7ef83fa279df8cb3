import { describe, expect, it } from "vitest";
import { parseLabel, previewHostOf, previewLabel, previewOrigin, PreviewPath } from "./address";

const base = { scheme: "http" as const, host: "preview.localhost", port: "3217" };
const sid = "cmaz3k1x00000abcdefghijkl";

describe("preview addresses", () => {
  it("a target's label and origin, and back", () => {
    const target = { sessionId: sid, machine: "node01", port: 30080 };
    expect(previewLabel(target)).toBe(`30080-node01-${sid}`);
    expect(previewOrigin(base, target)).toBe(`http://30080-node01-${sid}.preview.localhost:3217`);
    expect(parseLabel(`30080-node01-${sid}`)).toEqual(target);
    expect(parseLabel(`8080-control-plane-2-${sid}`)).toEqual({ sessionId: sid, machine: "control-plane-2", port: 8080 });
    expect(previewOrigin({ scheme: "https", host: "p.example.net", port: "" }, target)).toBe(`https://30080-node01-${sid}.p.example.net`);
  });

  it("labels that name nothing", () => {
    for (const label of [
      "",
      "x",
      `0-node01-${sid}`,
      `65536-node01-${sid}`,
      `080-node01-${sid}`,
      `80-Node01-${sid}`,
      `80--${sid}`,
      `80-node01-`,
      "80-node01-short",
    ]) {
      expect(parseLabel(label), label).toBeNull();
    }
    // Too long for a DNS label: no origin rather than a broken one.
    expect(previewLabel({ sessionId: sid, machine: "m".repeat(31), port: 65535 })?.length).toBe(63);
    expect(previewLabel({ sessionId: `${sid}x`, machine: "m".repeat(31), port: 65535 })).toBeNull();
  });

  it("which requests are preview requests (by Host), case and port aside", () => {
    expect(previewHostOf(base, `80-NODE01-${sid.toUpperCase()}.Preview.Localhost:3217`)).toEqual({
      label: `80-node01-${sid}`,
      target: { sessionId: sid, machine: "node01", port: 80 },
    });
    expect(previewHostOf(base, "127.0.0.1:3217")).toBeNull();
    expect(previewHostOf(base, "evilpreview.localhost")).toBeNull();
    expect(previewHostOf(base, undefined)).toBeNull();
    expect(previewHostOf(base, "preview.localhost")).toEqual({ label: "", target: null });
    expect(previewHostOf(base, `a.80-node01-${sid}.preview.localhost`)?.target).toBeNull();
  });

  it("paths a preview opens at", () => {
    expect(PreviewPath.parse(undefined)).toBe("/");
    expect(PreviewPath.parse("/app?x=1#y")).toBe("/app?x=1#y");
    for (const bad of ["//evil.example/", "http://evil.example/", "app", "/a b", "/a\\b", "/\r\nx", "/" + "a".repeat(2048)])
      expect(PreviewPath.safeParse(bad).success, bad).toBe(false);
  });
});
