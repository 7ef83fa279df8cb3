import { describe, expect, it } from "vitest";
import { previewLinkTarget } from "./preview-link";

const MACHINES = ["controlplane", "node01", "node02"];

describe("previewLinkTarget", () => {
  it("takes http links to a machine of the lab, with the port (80 by default), path and query", () => {
    expect(previewLinkTarget("http://node01:30080/", MACHINES)).toEqual({ machine: "node01", port: 30080, path: "/" });
    expect(previewLinkTarget("http://node02/app?x=1", MACHINES)).toEqual({ machine: "node02", port: 80, path: "/app?x=1" });
    expect(previewLinkTarget("HTTP://controlplane:8080", MACHINES)).toEqual({ machine: "controlplane", port: 8080, path: "/" });
  });

  it("leaves every other link alone", () => {
    for (const href of [
      undefined,
      "",
      "https://node01:30080/",
      "http://example.com/",
      "http://node09:80/",
      "http://user:pw@node01/",
      "/labs/x",
      "mailto:a@b",
      "javascript:alert(1)",
    ]) {
      expect(previewLinkTarget(href, MACHINES), String(href)).toBeNull();
    }
  });
});
