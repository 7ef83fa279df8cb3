import { describe, expect, it } from "vitest";
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

describe("image variants", () => {
  it("keeps debian-base's hash stable: it changes only with the guest files (the terminal holder file included)", () => {
    // The image carries server/holder/labdeck-holder: editing that file changes this hash
    // (a new image is built), as it should.
    expect(recipeHash(DEBIAN_BASE_RECIPE)).toBe("3576896529b23051");
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
