import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { buildImage, checkUpstream, UpstreamUnreachableError } from "../qemu/image";
import {
  DEBIAN_BASE_RECIPE,
  ImageRecipe,
  K8S_APT_KEY_FINGERPRINT,
  K8S_PACKAGE_VERSION,
  K8S_RECIPE,
  KUBESPRAY_RECIPE,
  needsUpstream,
  recipeByName,
  recipeHash,
  RECIPES,
} from "./recipe";

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

describe("image variants", () => {
  it("keeps debian-base's hash stable: it changes only with the guest files (the terminal holder file included)", () => {
    // The image carries server/holder/labdeck-holder: editing that file changes this hash
    // (a new image is built), as it should.
    expect(recipeHash(DEBIAN_BASE_RECIPE)).toBe("7c7b3fbc9bf32de7");
  });

  it("registers debian-base (Debian only) and the Kubernetes and kubespray variants (upstream)", () => {
    expect(Object.keys(RECIPES)).toEqual(["debian-base", "k8s-v1.31", "kubespray-v2.26.0"]);
    expect(needsUpstream(DEBIAN_BASE_RECIPE)).toBe(false);
    expect(needsUpstream(K8S_RECIPE)).toBe(true);
    expect(needsUpstream(KUBESPRAY_RECIPE)).toBe(true);
    expect(() => recipeByName("k8s-v9")).toThrow(/no image variant named "k8s-v9" \(known: debian-base, k8s-v1.31, kubespray-v2.26.0\)/);
  });

  it("pins kubeadm/kubelet/kubectl to one version, checks pkgs.k8s.io's key fingerprint and holds the packages", () => {
    const setup = K8S_RECIPE.setup.join("\n");
    for (const pkg of ["kubeadm", "kubelet", "kubectl"]) expect(setup).toContain(`${pkg}=${K8S_PACKAGE_VERSION}`);
    expect(setup).toContain(`[ "$fpr" = ${K8S_APT_KEY_FINGERPRINT} ]`);
    expect(setup).toContain("apt-mark hold kubeadm kubelet kubectl");
    expect(K8S_RECIPE.packages).toEqual(expect.arrayContaining([...DEBIAN_BASE_RECIPE.packages, "containerd", "runc"]));
  });

  it("hashes content, not words: the summary does not change the hash, an upstream source does", () => {
    const withSummary = ImageRecipe.parse({ ...K8S_RECIPE, summary: "other words" });
    expect(recipeHash(withSummary)).toBe(recipeHash(K8S_RECIPE));
    const otherSource = ImageRecipe.parse({
      ...K8S_RECIPE,
      upstream: [{ ...K8S_RECIPE.upstream[0]!, url: "https://example.invalid/key" }],
    });
    expect(recipeHash(otherSource)).not.toBe(recipeHash(K8S_RECIPE));
    expect(new Set(Object.values(RECIPES).map(recipeHash)).size).toBe(3);
  });

  it("sizes machines per variant without rebuilding the image: the k8s variant meets kubeadm's preflight (2 CPUs, 1700 MB)", () => {
    expect(DEBIAN_BASE_RECIPE.machine).toEqual({ vcpus: 1, memoryMiB: 512 });
    expect(K8S_RECIPE.machine.vcpus).toBeGreaterThanOrEqual(2);
    expect(K8S_RECIPE.machine.memoryMiB * 1024 * 1024).toBeGreaterThanOrEqual(1700 * 1000 * 1000);
    const resized = ImageRecipe.parse({ ...DEBIAN_BASE_RECIPE, machine: { vcpus: 2, memoryMiB: 1024 } });
    expect(recipeHash(resized)).toBe(recipeHash(DEBIAN_BASE_RECIPE));
    expect(ImageRecipe.safeParse({ name: "x", machine: { vcpus: 0 } }).success).toBe(false);
  });

  it("refuses malformed upstream pins", () => {
    const bad = ImageRecipe.safeParse({ name: "x", upstream: [{ name: "f", url: "ftp://x", sha256: "ABC" }] });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues.map((i) => i.path.join("."))).toEqual(["upstream.0.url", "upstream.0.sha256"]);
  });
});

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
