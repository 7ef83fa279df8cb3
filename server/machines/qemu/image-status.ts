/**
 * Whether a lab's machine image exists on this server, and if not, whether it can be built here.
 * Labs name an image variant (lab.yaml `image`, server/machines/images/recipe.ts); variants that
 * install software Debian does not ship (Kubernetes, kubespray) need upstream downloads, which
 * only a deployment with internet access can make. The session-start route calls
 * refuseUnbuiltImage so a learner gets a clear message instead of a failed boot; it also refuses
 * labs that ask for internet access (lab.yaml `network.internet`) where this host cannot give
 * QEMU machines the egress path (server/machines/qemu/egress.ts, network.ts).
 */
import { findImage } from "./image";
import { egressUnavailable } from "./egress";
import { internetLabRefusal } from "./network";
import type { Worded } from "../../worded";
import { needsUpstream, recipeByName, recipeHash } from "../images/recipe";

export type LabImageState =
  /** The image is on disk: sessions can boot it. */
  | "built"
  /** Not built, but Debian packages alone make it: an operator runs `image build`. */
  | "buildable"
  /** Not built, and it needs downloads from outside Debian: build it where the internet is reachable. */
  | "needs-upstream-not-built";

export interface LabImageStatus {
  slug: string;
  variant: string;
  /** Directory name the image has (or will have) under <data dir>/images/. */
  hash: string;
  state: LabImageState;
  /** What to tell a learner (a key under "errors"; none when built) and an operator (English). */
  message: { worded: Worded | null; en: string };
}

/** What this needs of a lab (server/labs/schema.ts LabManifest): its image variant and whether it asks for the internet. */
type LabRef = { slug: string; manifest: { image: string; network?: { internet: boolean } } };

/** The state of the lab's image under dataDir; reads the disk, never the network. */
export async function labImageStatus(dataDir: string, lab: LabRef): Promise<LabImageStatus> {
  const variant = lab.manifest.image;
  const recipe = recipeByName(variant);
  const hash = recipeHash(recipe);
  const base = { slug: lab.slug, variant, hash };
  const command = `npm run labdeck -- image build --variant ${variant}`;
  if (await findImage(dataDir, recipe)) {
    return { ...base, state: "built", message: { worded: null, en: `image ${variant} (${hash}) is built` } };
  }
  if (!needsUpstream(recipe)) {
    return {
      ...base,
      state: "buildable",
      message: {
        worded: { key: "imageNotBuilt", params: { variant, command } },
        en: `lab ${lab.slug} needs image ${variant}, which is not built yet; it is made from Debian packages alone: run \`${command}\``,
      },
    };
  }
  const sources = recipe.upstream.map((u) => u.name).join(", ");
  return {
    ...base,
    state: "needs-upstream-not-built",
    message: {
      worded: { key: "imageNeedsUpstream", params: { variant, sources, command, hash } },
      en:
        `lab ${lab.slug} needs image ${variant} (${hash}), which is not built on this server and cannot be built here: ` +
        `it downloads from outside Debian (${sources}). Run \`${command}\` on a host with internet access and copy ` +
        `<data dir>/images/${hash}/ into this server's data directory.`,
    },
  };
}

/**
 * For the session-start route: null when the lab may start, else the refusal to send (a key
 * under "errors" for the learner, English detail for operators). Only QEMU machines boot lab images and have
 * the default-deny network; static hosts are whatever the admin provides.
 */
export async function refuseUnbuiltImage(
  services: {
    provider: { name: string };
    env: { LABDECK_DATA_DIR: string };
    /** Whether this host can give internet labs their egress path; default: egress.ts probes this host. */
    egressUnavailable?: () => Promise<string | null>;
  },
  lab: LabRef,
): Promise<{ worded: Worded; detail: string } | null> {
  if (services.provider.name !== "qemu") return null;
  if (lab.manifest.network?.internet) {
    const unavailable = await (services.egressUnavailable ?? egressUnavailable)();
    if (unavailable) {
      return { worded: { key: "internetUnavailable" }, detail: internetLabRefusal(lab.slug, unavailable) };
    }
  }
  const status = await labImageStatus(services.env.LABDECK_DATA_DIR, lab);
  return status.message.worded ? { worded: status.message.worded, detail: status.message.en } : null;
}
