/**
 * The accelerator choice is probed once and kept in the data directory: a restart asks no timed
 * boot again until the host kernel, QEMU or the image's kernel changes. Uses this machine's QEMU
 * (installed with the platform's packages) and a kernel file that is no kernel: the probe fails
 * fast and chooses TCG, which is all the cache needs.
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { cachedAccel } from "./accel";

let dir: string;
beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-accel-"));
});
afterAll(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

it("probes once, answers from the data directory after that, and probes again when the image's kernel changes", async () => {
  const kernel = path.join(dir, "vmlinuz");
  await fs.writeFile(kernel, "not a kernel");
  const first = await cachedAccel(dir, { kernel });
  expect(first.cached).toBe(false);
  const second = await cachedAccel(dir, { kernel });
  expect(second).toEqual({ accel: first.accel, detail: first.detail, cached: true });
  await fs.writeFile(kernel, "another kernel, another size");
  expect((await cachedAccel(dir, { kernel })).cached).toBe(false);
  // A damaged file is probed over, not trusted.
  await fs.writeFile(path.join(dir, "qemu-accel.json"), "{");
  expect((await cachedAccel(dir, { kernel })).cached).toBe(false);
});
