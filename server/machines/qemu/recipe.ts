/**
 * Image recipes: what goes into a lab image. A recipe's hash (with the builder's version) names
 * the image directory, so a changed recipe or builder gives a new image and an old one stays
 * usable by the sessions still running on it.
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import { DISABLED_UNITS, ENABLED_UNITS, GUEST_DIRECTORIES, MASKED_UNITS, guestFiles } from "./guest";

/**
 * Bumped whenever the builder changes what it produces for the same recipe in ways the hash does
 * not see (build steps, filesystem options), so cached images of an older builder are not reused.
 * The guest files (guest.ts) are hashed themselves.
 */
export const IMAGE_BUILDER_VERSION = 1;

/** Packages the provider itself relies on (boot, seed, SSH, networking); added to every recipe. */
export const REQUIRED_PACKAGES = [
  "linux-image-amd64",
  "systemd-sysv",
  "udev",
  "dbus",
  "kmod",
  "openssh-server",
  "iproute2",
  "procps",
] as const;

const DebianPackage = z.string().regex(/^[a-z0-9][a-z0-9+.-]+$/, "must be a Debian package name");

export const ImageRecipe = z.strictObject({
  /** Human name, also shown in `image list`. */
  name: z.string().regex(/^[a-z0-9][a-z0-9-]{0,40}$/, "must be lowercase letters, digits and dashes"),
  /** Debian release to debootstrap. */
  suite: z.enum(["bookworm"]).default("bookworm"),
  /** Packages on top of REQUIRED_PACKAGES. */
  packages: z.array(DebianPackage).default([]),
  /** Shell lines run (sh -eu) inside the image's chroot at the end of the build. */
  setup: z.array(z.string()).default([]),
  /** Size of the root filesystem, GiB. The base qcow2 stores only the used blocks. */
  diskGiB: z.number().int().min(2).max(256).default(8),
});
export type ImageRecipe = z.infer<typeof ImageRecipe>;

/** The image every course lab boots unless its manifest names another (server/labs/schema.ts: `image`). */
export const DEBIAN_BASE_RECIPE: ImageRecipe = ImageRecipe.parse({
  name: "debian-base",
  packages: [
    "iputils-ping",
    "sudo",
    // Full python3, not python3-minimal: labs run python3 services and Ansible modules.
    "python3",
    "less",
    "nano",
    "vim-tiny",
    "curl",
    "ca-certificates",
    "gpg",
    "iptables",
    "conntrack",
    "bash-completion",
    "psmisc",
    "lsof",
    "tcpdump",
    "netcat-openbsd",
    // Detachable sessions for learners who want them; the gateway itself does not use dtach (it drops output for slow readers: ARCHITECTURE.md).
    "dtach",
    "screen",
    "tmux",
  ],
});

/** Recipes by the name a lab manifest uses. */
export const RECIPES: Readonly<Record<string, ImageRecipe>> = { [DEBIAN_BASE_RECIPE.name]: DEBIAN_BASE_RECIPE };

/** The recipe a lab names; throws naming the known ones. */
export function recipeByName(name: string): ImageRecipe {
  const recipe = RECIPES[name];
  if (!recipe) throw new Error(`no image recipe named ${JSON.stringify(name)} (known: ${Object.keys(RECIPES).join(", ")})`);
  return recipe;
}

/** Every package debootstrap installs for the recipe, sorted and without duplicates. */
export function recipePackages(recipe: ImageRecipe): string[] {
  return [...new Set([...REQUIRED_PACKAGES, ...recipe.packages])].sort();
}

/** 16 hex digits naming the image: hash of the builder version, the guest files and the normalised recipe. */
export function recipeHash(recipe: ImageRecipe): string {
  const normalised = {
    builder: IMAGE_BUILDER_VERSION,
    guest: { files: guestFiles(), dirs: GUEST_DIRECTORIES, enabled: ENABLED_UNITS, disabled: DISABLED_UNITS, masked: MASKED_UNITS },
    ...recipe,
    packages: recipePackages(recipe),
  };
  return createHash("sha256").update(JSON.stringify(normalised)).digest("hex").slice(0, 16);
}
