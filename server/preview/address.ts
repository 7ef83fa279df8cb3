/**
 * Web preview addresses: `http://<machine>:<port>/` of a lab session is shown at
 * `<scheme>://<port>-<machine>-<session id>.<preview host>[:port]/`. The label names everything
 * the proxy needs, so one origin serves one (lab session, machine, port): a lab's page shares its
 * origin (and so its cookies and storage) with nothing else, least of all Labdeck.
 */
import { z } from "zod";
import { MACHINE_NAME_PATTERN } from "../labs/schema";

/** The preview base (server/config.ts previewBase). */
export interface PreviewBase {
  scheme: "http" | "https";
  /** Lowercase host name the labels go in front of, e.g. preview.localhost. */
  host: string;
  /** Port in the preview URLs; empty for the scheme's default. */
  port: string;
}

export interface PreviewTarget {
  sessionId: string;
  machine: string;
  port: number;
}

/** Lab session ids are cuids: lowercase letters and digits. */
const SESSION_ID = /^[a-z0-9]{8,40}$/;
/** A DNS label is at most 63 characters. */
const MAX_LABEL = 63;

export const PreviewPort = z.coerce.number().int().min(1).max(65535);
export const PreviewMachine = z.string().regex(MACHINE_NAME_PATTERN);
/** The path a preview opens at: absolute, not protocol-relative, no control characters, bounded. */
export const PreviewPath = z
  .string()
  .max(2048)
  .regex(/^\/(?!\/)[^\s\\\u0000-\u001f\u007f]*$/, "must be a path starting with a single /")
  .default("/");

/** The label of a target, or null when it would not fit a DNS label. */
export function previewLabel(target: PreviewTarget): string | null {
  if (!SESSION_ID.test(target.sessionId) || !MACHINE_NAME_PATTERN.test(target.machine)) return null;
  const label = `${target.port}-${target.machine}-${target.sessionId}`;
  return label.length <= MAX_LABEL ? label : null;
}

/** The target a label names, or null for anything else. */
export function parseLabel(label: string): PreviewTarget | null {
  const match = /^([0-9]{1,5})-([a-z][a-z0-9-]{0,30})-([a-z0-9]{8,40})$/.exec(label);
  if (!match) return null;
  const port = Number(match[1]);
  if (port < 1 || port > 65535 || String(port) !== match[1]) return null;
  return { port, machine: match[2]!, sessionId: match[3]! };
}

/** The preview origin of a target (scheme://label.host[:port]), or null when its label would not fit. */
export function previewOrigin(base: PreviewBase, target: PreviewTarget): string | null {
  const label = previewLabel(target);
  if (!label) return null;
  return `${base.scheme}://${label}.${base.host}${base.port ? `:${base.port}` : ""}`;
}

/**
 * Which preview a request's Host header is for: null when it is not a preview host at all (the
 * request is Labdeck's), `{ target: null }` for a preview host whose label names nothing.
 */
export function previewHostOf(base: PreviewBase, hostHeader: string | undefined): { label: string; target: PreviewTarget | null } | null {
  if (!hostHeader) return null;
  const host = hostHeader.toLowerCase().replace(/:[0-9]+$/, "");
  const suffix = `.${base.host}`;
  if (!host.endsWith(suffix)) return host === base.host ? { label: "", target: null } : null;
  const label = host.slice(0, -suffix.length);
  return { label, target: label.includes(".") ? null : parseLabel(label) };
}
