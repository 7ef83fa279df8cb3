/**
 * A containerDisk image without Docker: an OCI image layout (image-spec v1.1 "image-layout.md") in
 * one tar file, written by this module in plain Node (tar headers included), which `skopeo copy
 * oci-archive:FILE docker://REGISTRY/…` pushes to a registry. One uncompressed layer holds
 *
 *   disk/root.qcow2     the image's root filesystem (owner 107:107, qemu in virt-launcher, as
 *                       KubeVirt's containerDisk docs ask; CDI's registry import reads /disk/ too)
 *   boot/vmlinuz        kernel and initrd for KubeVirt's kernelBoot (manifests.ts KERNEL_PATH):
 *   boot/initrd.img     the image has no boot loader, as on QEMU (direct kernel boot)
 *
 * Output is reproducible: fixed mtimes, owners and order, so the same image gives the same digests.
 * The layer is read twice (once for its digest, once into the archive) instead of being staged in
 * a temporary file as large as the disk.
 */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { INITRD_PATH, KERNEL_PATH } from "./manifests";

/** Owner of the files in the layer: KubeVirt runs QEMU as uid/gid 107. */
export const QEMU_UID = 107;
const TAR_BLOCK = 512;
/** Largest size an octal ustar size field holds (11 digits); above it the field is base-256 (GNU, POSIX pax-compatible readers accept it). */
const OCTAL_SIZE_MAX = 8 ** 11 - 1;
/** Read size when streaming files into the archive, bytes. */
const READ_CHUNK_BYTES = 1024 * 1024;

export const MEDIA_TYPES = {
  index: "application/vnd.oci.image.index.v1+json",
  manifest: "application/vnd.oci.image.manifest.v1+json",
  config: "application/vnd.oci.image.config.v1+json",
  layer: "application/vnd.oci.image.layer.v1.tar",
} as const;

export interface ContainerDiskInput {
  /** The qcow2 root disk (image.ts base.qcow2). */
  disk: string;
  kernel: string;
  initrd: string;
  /** org.opencontainers.image.ref.name in index.json, e.g. "debian-base:3ff57695c7cb6d31". */
  reference: string;
  /** Annotations on the manifest (recipe name and hash, kernel version). */
  annotations?: Record<string, string>;
}

export interface ContainerDiskResult {
  file: string;
  bytes: number;
  manifestDigest: string;
  layerDigest: string;
  layerBytes: number;
}

interface LayerEntry {
  name: string;
  mode: number;
  type: "file" | "dir";
  /** Source file on disk (files only). */
  source?: string;
  size: number;
}

/** Writes the OCI archive of a containerDisk to `out` (atomically: a temp file renamed). */
export async function writeContainerDisk(input: ContainerDiskInput, out: string): Promise<ContainerDiskResult> {
  const sizeOf = async (file: string) => (await fs.stat(file)).size;
  const entries: LayerEntry[] = [
    { name: "boot/", mode: 0o555, type: "dir", size: 0 },
    { name: KERNEL_PATH.slice(1), mode: 0o444, type: "file", source: input.kernel, size: await sizeOf(input.kernel) },
    { name: INITRD_PATH.slice(1), mode: 0o444, type: "file", source: input.initrd, size: await sizeOf(input.initrd) },
    { name: "disk/", mode: 0o555, type: "dir", size: 0 },
    { name: "disk/root.qcow2", mode: 0o440, type: "file", source: input.disk, size: await sizeOf(input.disk) },
  ];
  const layerBytes = entries.reduce((sum, e) => sum + TAR_BLOCK + padded(e.size), 0) + 2 * TAR_BLOCK;
  const layerHash = createHash("sha256");
  for await (const chunk of tarStream(entries.map((e) => ({ ...e, uid: QEMU_UID, gid: QEMU_UID })))) layerHash.update(chunk);
  const layerDigest = `sha256:${layerHash.digest("hex")}`;

  const config = json({
    architecture: "amd64",
    os: "linux",
    config: {},
    rootfs: { type: "layers", diff_ids: [layerDigest] },
    history: [{ created_by: "labdeck image build --format containerdisk", comment: "root disk in /disk, kernel and initrd in /boot" }],
  });
  const manifest = json({
    schemaVersion: 2,
    mediaType: MEDIA_TYPES.manifest,
    config: { mediaType: MEDIA_TYPES.config, digest: digest(config), size: config.length },
    layers: [{ mediaType: MEDIA_TYPES.layer, digest: layerDigest, size: layerBytes }],
    annotations: input.annotations ?? {},
  });
  const index = json({
    schemaVersion: 2,
    mediaType: MEDIA_TYPES.index,
    manifests: [
      {
        mediaType: MEDIA_TYPES.manifest,
        digest: digest(manifest),
        size: manifest.length,
        annotations: { "org.opencontainers.image.ref.name": input.reference },
      },
    ],
  });
  const blob = (d: string) => `blobs/sha256/${d.slice("sha256:".length)}`;
  const outer: OuterEntry[] = [
    { name: "oci-layout", mode: 0o444, type: "file", data: json({ imageLayoutVersion: "1.0.0" }) },
    { name: "index.json", mode: 0o444, type: "file", data: index },
    { name: "blobs/", mode: 0o555, type: "dir" },
    { name: "blobs/sha256/", mode: 0o555, type: "dir" },
    { name: blob(digest(config)), mode: 0o444, type: "file", data: config },
    { name: blob(digest(manifest)), mode: 0o444, type: "file", data: manifest },
    {
      name: blob(layerDigest),
      mode: 0o444,
      type: "file",
      size: layerBytes,
      stream: () => tarStream(entries.map((e) => ({ ...e, uid: QEMU_UID, gid: QEMU_UID }))),
    },
  ];

  const target = path.resolve(out);
  const temp = `${target}.${process.pid}.tmp`;
  const handle = await fs.open(temp, "w", 0o644);
  let bytes = 0;
  try {
    for await (const chunk of outerStream(outer)) {
      await handle.write(chunk);
      bytes += chunk.length;
    }
  } catch (error) {
    await handle.close();
    await fs.rm(temp, { force: true });
    throw error;
  }
  await handle.close();
  await fs.rename(temp, target);
  return { file: target, bytes, manifestDigest: digest(manifest), layerDigest, layerBytes };
}

interface OuterEntry {
  name: string;
  mode: number;
  type: "file" | "dir";
  data?: Buffer;
  size?: number;
  stream?: () => AsyncIterable<Buffer>;
}

async function* outerStream(entries: readonly OuterEntry[]): AsyncIterable<Buffer> {
  for (const entry of entries) {
    const size = entry.type === "dir" ? 0 : (entry.data?.length ?? entry.size ?? 0);
    yield tarHeader({ name: entry.name, mode: entry.mode, uid: 0, gid: 0, size, type: entry.type });
    if (entry.data) yield entry.data;
    else if (entry.stream) {
      let written = 0;
      for await (const chunk of entry.stream()) {
        written += chunk.length;
        yield chunk;
      }
      if (written !== size) throw new Error(`${entry.name}: wrote ${written} bytes, announced ${size}`);
    }
    if (size % TAR_BLOCK) yield Buffer.alloc(TAR_BLOCK - (size % TAR_BLOCK));
  }
  yield Buffer.alloc(2 * TAR_BLOCK);
}

/** A tar stream of `entries` (files read from disk in chunks), with the two zero blocks at the end. */
async function* tarStream(entries: readonly (LayerEntry & { uid: number; gid: number })[]): AsyncIterable<Buffer> {
  for (const entry of entries) {
    yield tarHeader(entry);
    if (entry.type !== "file") continue;
    let read = 0;
    for await (const chunk of createReadStream(entry.source!, { highWaterMark: READ_CHUNK_BYTES })) {
      read += (chunk as Buffer).length;
      yield chunk as Buffer;
    }
    if (read !== entry.size) throw new Error(`${entry.source} changed size while it was archived (${entry.size} → ${read} bytes)`);
    if (entry.size % TAR_BLOCK) yield Buffer.alloc(TAR_BLOCK - (entry.size % TAR_BLOCK));
  }
  yield Buffer.alloc(2 * TAR_BLOCK);
}

/** One POSIX ustar header block (mtime 0, owner names empty). */
export function tarHeader(entry: { name: string; mode: number; uid: number; gid: number; size: number; type: "file" | "dir" }): Buffer {
  const header = Buffer.alloc(TAR_BLOCK);
  let name = entry.name;
  let prefix = "";
  if (Buffer.byteLength(name) > 100) {
    const cut = name.lastIndexOf("/", 155);
    if (cut <= 0 || Buffer.byteLength(name.slice(cut + 1)) > 100) throw new Error(`tar: name too long: ${name}`);
    prefix = name.slice(0, cut);
    name = name.slice(cut + 1);
  }
  header.write(name, 0, 100, "utf8");
  octal(header, 100, 8, entry.mode);
  octal(header, 108, 8, entry.uid);
  octal(header, 116, 8, entry.gid);
  const size = entry.type === "dir" ? 0 : entry.size;
  if (size > OCTAL_SIZE_MAX) {
    // base-256: the high bit of the first byte set, the value big-endian in the rest of the field.
    header[124] = 0x80;
    header.writeBigUInt64BE(BigInt(size), 128);
  } else octal(header, 124, 12, size);
  octal(header, 136, 12, 0);
  header.write(entry.type === "dir" ? "5" : "0", 156, 1, "ascii");
  header.write("ustar\0", 257, 6, "ascii");
  header.write("00", 263, 2, "ascii");
  header.write(prefix, 345, 155, "utf8");
  // The checksum is computed with its own field as eight spaces.
  header.fill(0x20, 148, 156);
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, 8, "ascii");
  return header;
}

function octal(buffer: Buffer, offset: number, length: number, value: number): void {
  buffer.write(`${value.toString(8).padStart(length - 1, "0")}\0`, offset, length, "ascii");
}

function padded(size: number): number {
  return Math.ceil(size / TAR_BLOCK) * TAR_BLOCK;
}

function json(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value));
}

function digest(data: Buffer): string {
  return `sha256:${createHash("sha256").update(data).digest("hex")}`;
}
