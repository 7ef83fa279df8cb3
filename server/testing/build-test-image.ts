/**
 * Builds (or finds) the lab base image the VM tests boot (server/machines/qemu/test-image.ts),
 * so that `npm test` can make it while the rest of the suite starts: a cold build is minutes of
 * debootstrap that would otherwise sit at the head of the VM lane.
 *   node --import tsx server/testing/build-test-image.ts
 */
import { testImage } from "../machines/qemu/test-image";

const image = await testImage();
console.log(`test image ${image.hash} ready`);
