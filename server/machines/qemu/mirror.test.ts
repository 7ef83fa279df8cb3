import { describe, expect, it } from "vitest";
import { debianMirror, parseDeb822Sources, parseOneLineSources } from "./mirror";

describe("Debian mirror from apt sources", () => {
  it("reads deb822 stanzas, skipping disabled ones and deb-src", () => {
    const text = [
      "Types: deb-src",
      "URIs: http://src.example/debian",
      "Suites: bookworm",
      "Components: main",
      "",
      "Types: deb",
      "URIs: http://off.example/debian",
      "Suites: bookworm",
      "Components: main",
      "Enabled: no",
      "",
      "Types: deb",
      "# http://snapshot.debian.org/archive/debian/20250520T000000Z",
      "URIs: http://deb.debian.org/debian",
      "Suites: bookworm bookworm-updates",
      "Components: main",
      "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg",
      "",
    ].join("\n");
    expect(parseDeb822Sources(text, "x.sources")).toEqual([
      { uri: "http://deb.debian.org/debian", suites: ["bookworm", "bookworm-updates"], components: ["main"], file: "x.sources" },
    ]);
  });

  it("reads one-line entries with options and comments", () => {
    const text =
      "# comment\ndeb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian bookworm main contrib\ndeb-src http://x bookworm main\n";
    expect(parseOneLineSources(text, "sources.list")).toEqual([
      { uri: "http://mirror.example/debian", suites: ["bookworm"], components: ["main", "contrib"], file: "sources.list" },
    ]);
  });

  it("prefers an explicit mirror and refuses one that is not a URL", async () => {
    expect(await debianMirror("bookworm", "http://mirror.example/debian")).toBe("http://mirror.example/debian");
    await expect(debianMirror("bookworm", "mirror.example")).rejects.toThrow(/http\(s\) URL/);
  });
});
