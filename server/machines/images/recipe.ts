/**
 * Image recipes: what goes into a lab image. A recipe's hash (with the builder's version) names
 * the image directory, so a changed recipe or builder gives a new image and an old one stays
 * usable by the sessions still running on it.
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import { DISABLED_UNITS, ENABLED_UNITS, GUEST_DIRECTORIES, MASKED_UNITS, guestFiles } from "./guest";
import { DEFAULT_MACHINE_SIZE, machineSize } from "../sizes";

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

/**
 * Something a recipe downloads from outside Debian (the build refuses to start when it cannot
 * reach it: checkUpstream in image.ts). Debian packages are not listed: they come from the mirror.
 */
export const UpstreamSource = z.strictObject({
  /** What it is, for messages: "pkgs.k8s.io (kubeadm, kubelet, kubectl)". */
  name: z.string().min(1),
  /** A URL the build fetches; probed (GET, short timeout) before the build starts. */
  url: z.string().regex(/^https?:\/\/\S+$/, "must be an http(s) URL"),
  /**
   * sha256 of the file at `url`, when it is one file. null when `url` is an apt repository
   * (verified by its signing key, `gpgFingerprint`) or not pinned yet: the build then downloads,
   * prints the file's sha256 and stops until someone pins it here.
   */
  sha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex digits")
    .nullable()
    .default(null),
  /** Full fingerprint of the signing key an apt repository's Release.key must have. */
  gpgFingerprint: z
    .string()
    .regex(/^[0-9A-F]{40}$/, "must be 40 uppercase hex digits")
    .optional(),
});
export type UpstreamSource = z.infer<typeof UpstreamSource>;

export const ImageRecipe = z.strictObject({
  /** Human name, also shown in `image list`. */
  name: z.string().regex(/^[a-z0-9][a-z0-9.-]{0,40}$/, "must be lowercase letters, digits, dots and dashes"),
  /** Debian release to debootstrap. */
  suite: z.enum(["bookworm"]).default("bookworm"),
  /** Packages on top of REQUIRED_PACKAGES. */
  packages: z.array(DebianPackage).default([]),
  /** Shell lines run (sh -eu) inside the image's chroot at the end of the build. */
  setup: z.array(z.string()).default([]),
  /** Size of the root filesystem, GiB. The base qcow2 stores only the used blocks. */
  diskGiB: z.number().int().min(2).max(256).default(8),
  /** Downloads from outside Debian that `setup` makes; empty = buildable from Debian alone. */
  upstream: z.array(UpstreamSource).default([]),
  /** One line for operators (`image variants`), not part of the image hash. */
  summary: z.string().default(""),
  /**
   * What each VM booting this image gets (sizes.ts holds the variants' sizes as data): the
   * provider, the warm pool and the capacity math use it. Not part of the image hash (sizing a
   * machine does not change what is on its disk).
   */
  machine: z
    .strictObject({
      /** Virtual CPUs (QEMU -smp). */
      vcpus: z.number().int().min(1).max(16).default(1),
      /** Guest RAM, MiB. */
      memoryMiB: z.number().int().min(256).max(65536).default(512),
    })
    .default(DEFAULT_MACHINE_SIZE),
});
export type ImageRecipe = z.infer<typeof ImageRecipe>;

/** The image every course lab boots unless its manifest names another (server/labs/schema.ts: `image`). */
export const DEBIAN_BASE_RECIPE: ImageRecipe = ImageRecipe.parse({
  name: "debian-base",
  summary: "Debian bookworm minbase + tools the preinstall lab needs (Debian packages only; buildable here)",
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

/** Kubernetes release the k8s image variant installs (pkgs.k8s.io package version, pinned). */
export const K8S_MINOR = "v1.31";
export const K8S_PACKAGE_VERSION = "1.31.4-1.1";
/** Signing key of pkgs.k8s.io's repositories (isv:kubernetes OBS project), full fingerprint. */
export const K8S_APT_KEY_FINGERPRINT = "DE15B14486CD377B9E876E1A234654DA9A296436";
/** Flannel release whose manifest the k8s image carries at /opt/labdeck/kube-flannel.yml. */
export const FLANNEL_VERSION = "v0.26.1";
/** kubespray release the kubespray image carries at /opt/kubespray (with its pinned Ansible in a venv). */
export const KUBESPRAY_VERSION = "v2.26.0";

/**
 * Shell helper for recipe setup lines: `labdeck_fetch URL DEST SHA256` downloads URL and checks
 * its sha256; with an empty SHA256 it prints the file's hash and fails, so a source is pinned
 * once (where the internet is reachable) and never used unpinned.
 */
const FETCH_HELPER = [
  "labdeck_fetch() {",
  '  curl -fsSL --retry 3 -o "$2" "$1"',
  '  got=$(sha256sum "$2" | cut -d" " -f1)',
  '  if [ -z "$3" ]; then echo "labdeck: $1 is not pinned yet: its sha256 is $got; put it in server/machines/images/recipe.ts" >&2; exit 1; fi',
  '  if [ "$got" != "$3" ]; then echo "labdeck: $1 has sha256 $got, pinned: $3" >&2; exit 1; fi',
  "}",
];

const K8S_APT = `https://pkgs.k8s.io/core:/stable:/${K8S_MINOR}/deb/`;
const FLANNEL_MANIFEST: UpstreamSource = UpstreamSource.parse({
  name: `Flannel ${FLANNEL_VERSION} manifest`,
  url: `https://github.com/flannel-io/flannel/releases/download/${FLANNEL_VERSION}/kube-flannel.yml`,
  // Not pinned yet: this workplace cannot download it. The first build where it is reachable
  // prints its sha256 and stops (FETCH_HELPER); write the value here.
  sha256: null,
});
const KUBESPRAY_SOURCE: UpstreamSource = UpstreamSource.parse({
  name: `kubespray ${KUBESPRAY_VERSION} source`,
  url: `https://github.com/kubernetes-sigs/kubespray/archive/refs/tags/${KUBESPRAY_VERSION}.tar.gz`,
  sha256: null, // pinned on the first build with internet, as FLANNEL_MANIFEST
});

/**
 * debian-base + a kubeadm cluster's node software: containerd and runc from Debian; kubeadm,
 * kubelet, kubectl (and cri-tools, kubernetes-cni as their dependencies) from pkgs.k8s.io at a
 * pinned version, held; the prerequisites of the preinstall lab already applied; Flannel's
 * manifest on disk. Container images (control plane, Flannel, lab workloads) are pulled by the
 * VMs at run time through eth0's NAT, so the deployment's VMs need the internet too.
 */
export const K8S_RECIPE: ImageRecipe = ImageRecipe.parse({
  name: `k8s-${K8S_MINOR}`,
  machine: machineSize(`k8s-${K8S_MINOR}`),
  summary: `debian-base + containerd/runc (Debian) + kubeadm/kubelet/kubectl ${K8S_PACKAGE_VERSION} (pkgs.k8s.io) + Flannel ${FLANNEL_VERSION} manifest`,
  packages: [...DEBIAN_BASE_RECIPE.packages, "containerd", "runc", "socat", "ethtool", "ebtables", "jq"],
  diskGiB: 12,
  upstream: [
    {
      name: `pkgs.k8s.io ${K8S_MINOR} (kubeadm, kubelet, kubectl, cri-tools)`,
      url: `${K8S_APT}Release.key`,
      gpgFingerprint: K8S_APT_KEY_FINGERPRINT,
    },
    FLANNEL_MANIFEST,
  ],
  setup: [
    ...FETCH_HELPER,
    "install -d -m 0755 /etc/apt/keyrings /opt/labdeck",
    `curl -fsSL --retry 3 -o /tmp/k8s-release.key ${K8S_APT}Release.key`,
    `fpr=$(gpg --show-keys --with-colons /tmp/k8s-release.key | awk -F: '$1 == "fpr" { print $10; exit }')`,
    `[ "$fpr" = ${K8S_APT_KEY_FINGERPRINT} ] || { echo "labdeck: pkgs.k8s.io key has fingerprint $fpr, pinned: ${K8S_APT_KEY_FINGERPRINT}" >&2; exit 1; }`,
    "gpg --dearmor --batch --yes -o /etc/apt/keyrings/kubernetes-apt-keyring.gpg /tmp/k8s-release.key",
    "rm -f /tmp/k8s-release.key",
    `echo 'deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] ${K8S_APT} /' >/etc/apt/sources.list.d/kubernetes.list`,
    "apt-get update -q",
    `apt-get install -y -q --no-install-recommends kubeadm=${K8S_PACKAGE_VERSION} kubelet=${K8S_PACKAGE_VERSION} kubectl=${K8S_PACKAGE_VERSION}`,
    "apt-mark hold kubeadm kubelet kubectl",
    // containerd: systemd cgroups (kubeadm's kubelet default) and the pause image kubeadm 1.31 expects.
    "mkdir -p /etc/containerd",
    "containerd config default >/etc/containerd/config.toml",
    "sed -i -e 's/SystemdCgroup = false/SystemdCgroup = true/' -e 's#sandbox_image = .*#sandbox_image = \"registry.k8s.io/pause:3.10\"#' /etc/containerd/config.toml",
    "printf 'runtime-endpoint: unix:///run/containerd/containerd.sock\\nimage-endpoint: unix:///run/containerd/containerd.sock\\n' >/etc/crictl.yaml",
    "printf 'overlay\\nbr_netfilter\\n' >/etc/modules-load.d/k8s.conf",
    "printf 'net.ipv4.ip_forward = 1\\nnet.bridge.bridge-nf-call-iptables = 1\\nnet.bridge.bridge-nf-call-ip6tables = 1\\n' >/etc/sysctl.d/k8s.conf",
    `labdeck_fetch ${FLANNEL_MANIFEST.url} /opt/labdeck/kube-flannel.yml "${FLANNEL_MANIFEST.sha256 ?? ""}"`,
    "systemctl enable containerd kubelet",
  ],
});

/**
 * debian-base + kubespray's source at a pinned tag and the Ansible its requirements.txt pins, in
 * a venv (/opt/kubespray-venv, on PATH for login shells). Debian's ansible-core 2.14 is too old
 * for kubespray's own version check, so Ansible comes from PyPI as kubespray prescribes.
 */
export const KUBESPRAY_RECIPE: ImageRecipe = ImageRecipe.parse({
  name: `kubespray-${KUBESPRAY_VERSION}`,
  machine: machineSize(`kubespray-${KUBESPRAY_VERSION}`),
  summary: `debian-base + kubespray ${KUBESPRAY_VERSION} (GitHub) + its pinned Ansible (PyPI) in /opt/kubespray-venv`,
  packages: [...DEBIAN_BASE_RECIPE.packages, "python3-venv", "python3-pip", "git", "rsync", "openssh-client", "jq"],
  upstream: [
    KUBESPRAY_SOURCE,
    { name: "PyPI (ansible and the other pins of kubespray's requirements.txt)", url: "https://pypi.org/simple/ansible/" },
  ],
  setup: [
    ...FETCH_HELPER,
    `labdeck_fetch ${KUBESPRAY_SOURCE.url} /tmp/kubespray.tar.gz "${KUBESPRAY_SOURCE.sha256 ?? ""}"`,
    "mkdir -p /opt/kubespray && tar -xzf /tmp/kubespray.tar.gz -C /opt/kubespray --strip-components=1 && rm /tmp/kubespray.tar.gz",
    "python3 -m venv /opt/kubespray-venv",
    "/opt/kubespray-venv/bin/pip install --no-cache-dir -q -r /opt/kubespray/requirements.txt",
    "echo 'PATH=/opt/kubespray-venv/bin:$PATH' >/etc/profile.d/kubespray.sh",
  ],
});

/** Image variants by the name a lab manifest's `image` uses. */
export const RECIPES: Readonly<Record<string, ImageRecipe>> = Object.fromEntries(
  [DEBIAN_BASE_RECIPE, K8S_RECIPE, KUBESPRAY_RECIPE].map((r) => [r.name, r]),
);

/** True when building the variant downloads from outside Debian (which this workplace cannot reach). */
export function needsUpstream(recipe: ImageRecipe): boolean {
  return recipe.upstream.length > 0;
}

/** The recipe a lab names; throws naming the known ones. */
export function recipeByName(name: string): ImageRecipe {
  const recipe = RECIPES[name];
  if (!recipe) throw new Error(`no image variant named ${JSON.stringify(name)} (known: ${Object.keys(RECIPES).join(", ")})`);
  return recipe;
}

/** Every package debootstrap installs for the recipe, sorted and without duplicates. */
export function recipePackages(recipe: ImageRecipe): string[] {
  return [...new Set([...REQUIRED_PACKAGES, ...recipe.packages])].sort();
}

/**
 * 16 hex digits naming the image: hash of the builder version, the guest files and the normalised
 * recipe. `summary` and `machine` are left out (words and sizing, not content) and `upstream` only counts when present, so
 * a recipe without upstream sources hashes as it did before variants existed.
 */
export function recipeHash(recipe: ImageRecipe): string {
  const { summary: _summary, machine: _machine, upstream, ...content } = recipe;
  const normalised = {
    builder: IMAGE_BUILDER_VERSION,
    guest: { files: guestFiles(), dirs: GUEST_DIRECTORIES, enabled: ENABLED_UNITS, disabled: DISABLED_UNITS, masked: MASKED_UNITS },
    ...content,
    packages: recipePackages(recipe),
    ...(upstream.length > 0 ? { upstream } : {}),
  };
  return createHash("sha256").update(JSON.stringify(normalised)).digest("hex").slice(0, 16);
}
