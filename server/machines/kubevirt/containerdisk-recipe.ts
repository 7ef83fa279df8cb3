/**
 * The fleet's flavour of an image recipe: the same variant plus cloud-init, which applies the
 * identity KubeVirt hands over as NoCloud data (cloud-init.ts) the way labdeck-seed applies QEMU's
 * fw_cfg seed. A separate recipe, so a separate hash: QEMU images stay as they are.
 */
import { ImageRecipe, recipeHash } from "../images/recipe";

/** cloud-init's settings in the image: NoCloud only (no network metadata probes at boot), networkd renders network-config. */
export const CLOUD_INIT_IMAGE_CONFIG = {
  path: "/etc/cloud/cloud.cfg.d/90-labdeck.cfg",
  content:
    "# Installed by Labdeck (server/machines/kubevirt/containerdisk-recipe.ts).\ndatasource_list: [ NoCloud, None ]\nsystem_info:\n  network:\n    renderers: [ networkd ]\n",
};

export function containerDiskRecipe(recipe: ImageRecipe): ImageRecipe {
  return ImageRecipe.parse({
    ...recipe,
    packages: [...recipe.packages, "cloud-init"],
    setup: [
      ...recipe.setup,
      `mkdir -p /etc/cloud/cloud.cfg.d && printf '%s' '${CLOUD_INIT_IMAGE_CONFIG.content.replaceAll("'", "'\\''")}' > ${CLOUD_INIT_IMAGE_CONFIG.path}`,
    ],
  });
}

/** The tag of a variant's containerDisk image and the name part of its golden PVC. */
export function containerDiskImageHash(recipe: ImageRecipe): string {
  return recipeHash(containerDiskRecipe(recipe));
}
