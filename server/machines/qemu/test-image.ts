/**
 * The lab base image for tests and benchmarks that boot real VMs: built once into a cache
 * directory kept across runs (keyed by the recipe hash, so a recipe change builds a new one).
 * A cold build costs 2.5-5 min on a shared 2-core host; a cached one nothing.
 */
import os from "node:os";
import path from "node:path";
import { buildImage, type BuiltImage } from "./image";

/** Images built by tests, kept across runs. */
export const TEST_IMAGE_CACHE_DIR =
  process.getuid?.() === 0 ? "/var/cache/labdeck-test-images" : path.join(os.tmpdir(), "labdeck-test-images");

/** A cold image build: debootstrap of ~200 packages plus the disk, with room for a busy host. */
export const IMAGE_BUILD_TIMEOUT_MS = 15 * 60_000;

/** Builds (or finds) the base image, printing progress every 20 %. */
export async function testImage(): Promise<BuiltImage> {
  let reported = -1;
  return buildImage({
    dataDir: TEST_IMAGE_CACHE_DIR,
    onProgress: (p) => {
      if (Math.floor(p.percent / 20) === reported) return;
      reported = Math.floor(p.percent / 20);
      console.log(`image: ${p.percent}% ${p.phase}: ${p.message}`);
    },
  });
}
