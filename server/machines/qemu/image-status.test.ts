import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { imagesDir } from "./image";
import { DEBIAN_BASE_RECIPE, recipeHash } from "../images/recipe";
import { labImageStatus, refuseUnbuiltImage } from "./image-status";
import { errorMessage } from "../../i18n/locale";

let dataDir: string;
beforeEach(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "labdeck-imgstatus-"));
});
afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

const lab = (image: string) => ({ slug: "x", manifest: { image } });

describe("labImageStatus", () => {
  it("reports the k8s variant as not buildable here, in Japanese and English, with what to do", async () => {
    const status = await labImageStatus(dataDir, lab("k8s-v1.31"));
    expect(status.state).toBe("needs-upstream-not-built");
    const ja = errorMessage("ja", status.message.worded!.key, status.message.worded!.params);
    expect(ja).toContain("インターネットに出られない環境では作れず");
    expect(ja).toContain("npm run labdeck -- image build --variant k8s-v1.31");
    expect(ja).toContain("pkgs.k8s.io");
    expect(status.message.en).toContain("cannot be built here");
    expect(status.message.en).toContain(`images/${status.hash}/`);
  });

  it("reports an unbuilt debian-base as buildable from Debian alone", async () => {
    const status = await labImageStatus(dataDir, lab("debian-base"));
    expect(status.state).toBe("buildable");
    expect(status.message.en).toContain("Debian packages alone");
  });

  it("reports built for a complete image directory (hand-made files, not a real build)", async () => {
    const dir = path.join(imagesDir(dataDir), recipeHash(DEBIAN_BASE_RECIPE));
    await mkdir(dir, { recursive: true });
    for (const f of ["base.qcow2", "vmlinuz", "initrd.img"]) await writeFile(path.join(dir, f), "");
    const manifest = {
      hash: recipeHash(DEBIAN_BASE_RECIPE),
      recipe: DEBIAN_BASE_RECIPE,
      packages: [],
      mirror: "http://m",
      kernelVersion: "6",
      builtAt: "now",
      seconds: {},
      baseBytes: 0,
    };
    await writeFile(path.join(dir, "manifest.json"), JSON.stringify(manifest));
    expect((await labImageStatus(dataDir, lab("debian-base"))).state).toBe("built");
    // A k8s lab is still refused: its variant is another image.
    expect((await labImageStatus(dataDir, lab("k8s-v1.31"))).state).toBe("needs-upstream-not-built");
  });
});

describe("refuseUnbuiltImage (session start)", () => {
  const env = () => ({ LABDECK_DATA_DIR: dataDir });

  it("refuses a QEMU session whose image is missing, with the Japanese message for the learner", async () => {
    const refusal = await refuseUnbuiltImage({ provider: { name: "qemu" }, env: env() }, lab("k8s-v1.31"));
    expect(errorMessage("ja", refusal!.worded.key, refusal!.worded.params)).toContain("このラボはマシンイメージ k8s-v1.31 を使います");
    expect(refusal?.detail).toContain("cannot be built here");
  });

  it("refuses a QEMU session of a lab that asks for internet access where the egress path cannot be set up, saying why", async () => {
    const internetLab = { slug: "x", manifest: { image: "debian-base", network: { internet: true } } };
    // The host probe answering as on a host without nftables (egress.ts egressUnavailable).
    const noNft = async () => "missing host tool nft: install with apt-get install -y nftables";
    const refusal = await refuseUnbuiltImage({ provider: { name: "qemu" }, env: env(), egressUnavailable: noNft }, internetLab);
    expect(errorMessage("ja", refusal!.worded.key)).toContain("インターネット接続を用意できません");
    expect(refusal?.detail).toContain("network.internet");
    expect(refusal?.detail).toContain("missing host tool nft");
    expect(await refuseUnbuiltImage({ provider: { name: "static" }, env: env(), egressUnavailable: noNft }, internetLab)).toBeNull();
  });

  it("lets an internet lab through where the egress path can be set up (then only its image decides)", async () => {
    const internetLab = { slug: "x", manifest: { image: "debian-base", network: { internet: true } } };
    const refusal = await refuseUnbuiltImage({ provider: { name: "qemu" }, env: env(), egressUnavailable: async () => null }, internetLab);
    // debian-base is not built in this data directory: the image refusal, not the internet one.
    expect(refusal?.detail).toContain("needs image debian-base");
    expect(refusal?.detail).not.toContain("network.internet");
  });

  it("lets static hosts through: their machines are the admin's, not an image", async () => {
    expect(await refuseUnbuiltImage({ provider: { name: "static" }, env: env() }, lab("k8s-v1.31"))).toBeNull();
  });
});
