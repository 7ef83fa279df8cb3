/**
 * The containerDisk archive read back by GNU tar (a reader we did not write): an OCI image layout
 * whose index, manifest, config and layer digests and sizes hold, whose layer has the disk under
 * /disk and kernel and initrd under /boot with KubeVirt's qemu owner, byte for byte, and which
 * comes out the same twice.
 */
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { MEDIA_TYPES, QEMU_UID, tarHeader, writeContainerDisk } from "./containerdisk";

let dir: string;
const sha = (data: Buffer) => `sha256:${createHash("sha256").update(data).digest("hex")}`;

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-containerdisk-"));
  // Sizes that are not multiples of 512 (padding) and one of several MiB (chunked reads).
  await fs.writeFile(path.join(dir, "base.qcow2"), randomBytes(3 * 1024 * 1024 + 7));
  await fs.writeFile(path.join(dir, "vmlinuz"), randomBytes(70_001));
  await fs.writeFile(path.join(dir, "initrd.img"), randomBytes(513));
});
afterAll(async () => {
  // The archive's directories extract read-only (as in the image): writable again before removal
  // (only root may remove entries of a read-only directory).
  execFileSync("chmod", ["-R", "u+w", dir]);
  await fs.rm(dir, { recursive: true, force: true });
});

const Descriptor = z.object({ mediaType: z.string(), digest: z.string().regex(/^sha256:[0-9a-f]{64}$/), size: z.number().int() });

describe("containerDisk as an OCI archive (written without Docker)", () => {
  it("is an OCI image layout that GNU tar reads, with consistent digests and the disk in /disk", async () => {
    const input = {
      disk: path.join(dir, "base.qcow2"),
      kernel: path.join(dir, "vmlinuz"),
      initrd: path.join(dir, "initrd.img"),
      reference: "debian-base:0123456789abcdef",
    };
    const result = await writeContainerDisk(input, path.join(dir, "image.tar"));
    expect(result.bytes).toBe((await fs.stat(result.file)).size);

    const outer = path.join(dir, "outer");
    await fs.mkdir(outer);
    execFileSync("tar", ["-xf", result.file, "-C", outer]);
    expect(JSON.parse(await fs.readFile(path.join(outer, "oci-layout"), "utf8"))).toEqual({ imageLayoutVersion: "1.0.0" });
    const blob = async (d: { digest: string; size: number }) => {
      const data = await fs.readFile(path.join(outer, "blobs/sha256", d.digest.slice(7)));
      expect(sha(data)).toBe(d.digest);
      expect(data.length).toBe(d.size);
      return data;
    };
    const index = z
      .object({
        schemaVersion: z.literal(2),
        mediaType: z.literal(MEDIA_TYPES.index),
        manifests: z.array(Descriptor.extend({ annotations: z.record(z.string(), z.string()) })).length(1),
      })
      .parse(JSON.parse(await fs.readFile(path.join(outer, "index.json"), "utf8")));
    expect(index.manifests[0]!.annotations["org.opencontainers.image.ref.name"]).toBe("debian-base:0123456789abcdef");
    expect(index.manifests[0]!.digest).toBe(result.manifestDigest);
    const manifest = z
      .object({
        schemaVersion: z.literal(2),
        mediaType: z.literal(MEDIA_TYPES.manifest),
        config: Descriptor,
        layers: z.array(Descriptor).length(1),
      })
      .parse(JSON.parse((await blob(index.manifests[0]!)).toString("utf8")));
    expect(manifest.config.mediaType).toBe(MEDIA_TYPES.config);
    expect(manifest.layers[0]!.mediaType).toBe(MEDIA_TYPES.layer);
    const config = z
      .object({
        architecture: z.literal("amd64"),
        os: z.literal("linux"),
        rootfs: z.object({ type: z.literal("layers"), diff_ids: z.array(z.string()) }),
      })
      .parse(JSON.parse((await blob(manifest.config)).toString("utf8")));
    const layer = await blob(manifest.layers[0]!);
    // Uncompressed layer: its diff id is its digest.
    expect(config.rootfs.diff_ids).toEqual([manifest.layers[0]!.digest]);

    const layerFile = path.join(dir, "layer.tar");
    await fs.writeFile(layerFile, layer);
    const listing = execFileSync("tar", ["--numeric-owner", "-tvf", layerFile], { encoding: "utf8" }).trim().split("\n");
    expect(listing.map((l) => l.split(/\s+/).slice(-1)[0])).toEqual([
      "boot/",
      "boot/vmlinuz",
      "boot/initrd.img",
      "disk/",
      "disk/root.qcow2",
    ]);
    for (const line of listing) expect(line.split(/\s+/)[1]).toBe(`${QEMU_UID}/${QEMU_UID}`);
    const inner = path.join(dir, "inner");
    await fs.mkdir(inner);
    execFileSync("tar", ["-xf", layerFile, "-C", inner]);
    for (const [inside, source] of [
      ["disk/root.qcow2", input.disk],
      ["boot/vmlinuz", input.kernel],
      ["boot/initrd.img", input.initrd],
    ] as const) {
      expect((await fs.readFile(path.join(inner, inside))).equals(await fs.readFile(source))).toBe(true);
    }

    // Reproducible: the same inputs give the same bytes.
    const again = await writeContainerDisk(input, path.join(dir, "again.tar"));
    expect(again.manifestDigest).toBe(result.manifestDigest);
    expect((await fs.readFile(again.file)).equals(await fs.readFile(result.file))).toBe(true);
  });

  it("writes sizes beyond ustar's octal field in base-256, and checksums GNU tar accepts", async () => {
    const big = tarHeader({ name: "disk/root.qcow2", mode: 0o440, uid: 107, gid: 107, size: 9 * 2 ** 30, type: "file" });
    expect(big[124]).toBe(0x80);
    expect(big.readBigUInt64BE(128)).toBe(BigInt(9 * 2 ** 30));
    // A header alone (size 0) and the end blocks: GNU tar lists it with the name and owner we wrote.
    const file = path.join(dir, "header.tar");
    await fs.writeFile(
      file,
      Buffer.concat([
        tarHeader({ name: "a/".repeat(60) + "long-name", mode: 0o444, uid: 107, gid: 107, size: 0, type: "file" }),
        Buffer.alloc(1024),
      ]),
    );
    expect(execFileSync("tar", ["--numeric-owner", "-tvf", file], { encoding: "utf8" })).toMatch(
      new RegExp(`^-r--r--r-- 107/107 +0 1970-01-01 00:00 ${"a/".repeat(60)}long-name\\n$`),
    );
  });
});

describe("labdeck image build --format containerdisk", () => {
  it("archives the cached fleet image of the variant (the recipe + cloud-init) under its hash, and says how to push it", async () => {
    const { runQemuCli } = await import("../../cli/image");
    const { containerDiskRecipe, containerDiskImageHash } = await import("./containerdisk-recipe");
    const { recipeByName, recipeHash, recipePackages } = await import("../images/recipe");
    const recipe = containerDiskRecipe(recipeByName("debian-base"));
    expect(recipe.packages).toContain("cloud-init");
    const hash = containerDiskImageHash(recipeByName("debian-base"));
    expect(hash).not.toBe(recipeHash(recipeByName("debian-base"))); // QEMU's image stays what it was
    // A built image in the cache (image.ts layout) stands in for a debootstrap run.
    const dataDir = path.join(dir, "data");
    const imageDir = path.join(dataDir, "images", hash);
    await fs.mkdir(imageDir, { recursive: true });
    for (const file of ["base.qcow2", "vmlinuz", "initrd.img"]) await fs.copyFile(path.join(dir, file), path.join(imageDir, file));
    const manifest = {
      hash,
      recipe,
      packages: recipePackages(recipe),
      mirror: "http://deb.debian.org/debian",
      kernelVersion: "6.1.0-test-amd64",
      builtAt: "2026-12-02T00:00:00.000Z",
      seconds: {},
      baseBytes: 1,
    };
    await fs.writeFile(path.join(imageDir, "manifest.json"), JSON.stringify(manifest));

    const out: string[] = [];
    const err: string[] = [];
    const log = console.log;
    const error = console.error;
    console.log = (line: string) => void out.push(line);
    console.error = (line: string) => void err.push(line);
    try {
      await runQemuCli(["image", "build", "--format", "containerdisk", "--data-dir", dataDir]);
    } finally {
      console.log = log;
      console.error = error;
    }
    const result = z
      .object({ hash: z.string(), reference: z.string(), archive: z.object({ file: z.string(), manifestDigest: z.string() }) })
      .parse(JSON.parse(out.join("\n")));
    expect(result).toMatchObject({
      hash,
      reference: `debian-base:${hash}`,
      archive: { file: path.join(imageDir, "containerdisk.oci.tar") },
    });
    expect(err.join("\n")).toContain(
      `skopeo copy oci-archive:${result.archive.file} docker://<LABDECK_KUBEVIRT_IMAGE_REPOSITORY>/debian-base:${hash}`,
    );
    const listing = execFileSync("tar", ["-tf", result.archive.file], { encoding: "utf8" });
    expect(listing).toContain(`blobs/sha256/${result.archive.manifestDigest.slice(7)}`);
    await expect(runQemuCli(["image", "build", "--out", "x.tar", "--data-dir", dataDir])).rejects.toThrow(
      /--out is for --format containerdisk/,
    );
  });
});
