import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { buildImage, checkUpstream, UpstreamUnreachableError } from "./image";
import { DEBIAN_BASE_RECIPE, ImageRecipe, K8S_RECIPE } from "../images/recipe";

/** A loopback port nothing listens on: bound, noted, closed. */
async function closedLoopbackPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

let servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  servers = [];
});

/** A loopback HTTP server answering every request with `status`; resolves with its base URL and hit counter. */
async function loopbackServer(status: number): Promise<{ url: string; hits: () => number }> {
  let hits = 0;
  const server = createServer((_req, res) => {
    hits++;
    res.writeHead(status).end("x".repeat(1024));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits: () => hits };
}

describe("upstream reachability (loopback servers only)", () => {
  it("makes no request for a Debian-only recipe", async () => {
    await expect(checkUpstream(DEBIAN_BASE_RECIPE)).resolves.toBeUndefined();
  });

  it("passes when every upstream URL answers 2xx, fails naming the URL on 404", async () => {
    const ok = await loopbackServer(200);
    const missing = await loopbackServer(404);
    const recipe = (url: string) => ImageRecipe.parse({ name: "probe", upstream: [{ name: "thing", url: `${url}/file` }] });
    await checkUpstream(recipe(ok.url));
    expect(ok.hits()).toBe(1);
    await expect(checkUpstream(recipe(missing.url))).rejects.toThrow(
      `thing from ${missing.url}/file, which is unreachable from here (HTTP 404)`,
    );
  });

  it("a variant whose upstream is unreachable fails `image build` fast, saying which URL and what to do", async () => {
    const port = await closedLoopbackPort();
    const dataDir = await mkdtemp(path.join(tmpdir(), "labdeck-img-"));
    try {
      const recipe = ImageRecipe.parse({
        ...K8S_RECIPE,
        name: "k8s-test",
        upstream: [{ name: "pkgs.k8s.io", url: `http://127.0.0.1:${port}/Release.key` }],
      });
      const started = Date.now();
      const error = await buildImage({ dataDir, recipe }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(error).toBeInstanceOf(UpstreamUnreachableError);
      const message = (error as Error).message;
      expect(message).toContain(`image variant k8s-test cannot be built on this host`);
      expect(message).toContain(`http://127.0.0.1:${port}/Release.key`);
      expect(message).toContain("ECONNREFUSED");
      expect(message).toContain("reaches only Debian's mirror and the npm registry");
      expect(message).toContain("npm run labdeck -- image build --variant k8s-test");
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
