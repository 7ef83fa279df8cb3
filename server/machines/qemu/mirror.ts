/**
 * Which Debian mirror the image is built from: the one this host's own apt already uses (it is
 * known to be reachable from here), unless the caller names one.
 */
import fs from "node:fs/promises";
import path from "node:path";

/** apt's main sources file (one-line format). */
const SOURCES_LIST = "/etc/apt/sources.list";
/** apt's drop-in directory: `*.list` (one-line) and `*.sources` (deb822) files. */
const SOURCES_DIR = "/etc/apt/sources.list.d";

export interface AptSource {
  uri: string;
  suites: string[];
  components: string[];
  /** File the entry came from, for messages. */
  file: string;
}

/** Parses one-line `deb [options] uri suite component...` entries; `deb-src` and comments are skipped. */
export function parseOneLineSources(text: string, file: string): AptSource[] {
  const result: AptSource[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.replace(/#.*/, "").trim();
    if (!line.startsWith("deb ")) continue;
    const words = line
      .slice(4)
      .replace(/\[[^\]]*\]/, " ")
      .trim()
      .split(/\s+/);
    const [uri, suite, ...components] = words;
    if (uri && suite) result.push({ uri, suites: [suite], components, file });
  }
  return result;
}

/** Parses deb822 stanzas (`Types: deb`, `URIs:`, `Suites:`, `Components:`, `Enabled:`). */
export function parseDeb822Sources(text: string, file: string): AptSource[] {
  const result: AptSource[] = [];
  for (const stanza of text.split(/\n\s*\n/)) {
    const fields = new Map<string, string>();
    let last: string | undefined;
    for (const raw of stanza.split("\n")) {
      if (raw.startsWith("#")) continue;
      if (/^\s/.test(raw) && last) {
        fields.set(last, `${fields.get(last)} ${raw.trim()}`);
        continue;
      }
      const match = /^([A-Za-z-]+):\s*(.*)$/.exec(raw);
      if (!match) continue;
      last = match[1]!.toLowerCase();
      fields.set(last, match[2]!.trim());
    }
    const list = (key: string) => (fields.get(key) ?? "").split(/\s+/).filter(Boolean);
    if (!list("types").includes("deb")) continue;
    if (/^(no|false)$/i.test(fields.get("enabled") ?? "yes")) continue;
    for (const uri of list("uris")) result.push({ uri, suites: list("suites"), components: list("components"), file });
  }
  return result;
}

/** Every `deb` entry apt on this host reads. Unreadable or missing files are skipped. */
export async function hostAptSources(): Promise<AptSource[]> {
  const sources: AptSource[] = [];
  const main = await fs.readFile(SOURCES_LIST, "utf8").catch(() => "");
  sources.push(...parseOneLineSources(main, SOURCES_LIST));
  const entries = await fs.readdir(SOURCES_DIR).catch(() => [] as string[]);
  for (const entry of entries.sort()) {
    const file = path.join(SOURCES_DIR, entry);
    if (entry.endsWith(".list")) sources.push(...parseOneLineSources(await fs.readFile(file, "utf8").catch(() => ""), file));
    if (entry.endsWith(".sources")) sources.push(...parseDeb822Sources(await fs.readFile(file, "utf8").catch(() => ""), file));
  }
  return sources;
}

/**
 * The mirror to debootstrap `suite` from: `override` when given, else the first http(s) entry of
 * the host's apt sources that carries exactly that suite with the `main` component.
 */
export async function debianMirror(suite: string, override?: string): Promise<string> {
  if (override) {
    if (!/^https?:\/\/\S+$/.test(override)) throw new Error(`Debian mirror must be an http(s) URL (got ${JSON.stringify(override)})`);
    return override;
  }
  const sources = await hostAptSources();
  const match = sources.find(
    (s) => /^https?:\/\//.test(s.uri) && s.suites.includes(suite) && (s.components.length === 0 || s.components.includes("main")),
  );
  if (!match) {
    const seen = sources.map((s) => `${s.uri} ${s.suites.join(",")} (${s.file})`).join("; ") || "none";
    throw new Error(
      `no Debian mirror for suite ${suite} in this host's apt sources (${SOURCES_LIST}, ${SOURCES_DIR}/*); ` +
        `seen: ${seen}. Name one with LABDECK_DEBIAN_MIRROR or --mirror, e.g. http://deb.debian.org/debian`,
    );
  }
  return match.uri;
}
