/**
 * The web preview proxy: requests whose Host is `<label>.<preview host>` (address.ts) are answered
 * here, before Next.js and before Labdeck's own request guard, and never reach Labdeck's pages
 * or APIs. `/__labdeck/enter?code=…` exchanges an entry code for the origin's grant cookie
 * (grant.ts); every other request needs that cookie, is authorized again against the database
 * (cached ACCESS_CACHE_MS) and is relayed — HTTP and WebSocket upgrades — over an SSH
 * direct-tcpip stream to 127.0.0.1:<port> on the machine (tunnels.ts).
 *
 * Watchers (read-only) may GET and HEAD; other methods and WebSockets are the owner's.
 * The Host header goes to the machine unchanged (the preview host), so a page's absolute URLs,
 * redirects and Origin checks agree with what the browser sees. The machine gets only the page's
 * own cookies (cookies.ts), and a machine's Set-Cookie for the grant's name is dropped. A grant
 * cookie shadowed by one a page set for the parent preview domain still counts, and the parent
 * one is cleared.
 */
import http, { type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { Logger } from "pino";
import { errorMessage, localeFromHeaders } from "../i18n/locale";
import type { SshEndpoint } from "../ssh/connect";
import type { PreviewAccess } from "./access";
import { PreviewPath, previewHostOf, previewOrigin, type PreviewBase, type PreviewTarget } from "./address";
import {
  grantCookieName,
  PREVIEW_ENTER_PATH,
  PREVIEW_GRANT_TTL_MS,
  PREVIEW_RESERVED_PREFIX,
  signPreview,
  verifyPreview,
  type PreviewClaims,
} from "./grant";
import { TunnelError, TunnelPool } from "./tunnels";
import { chooseGrant, clearParentCookie, cookieValues, machineCookieHeader } from "./cookies";

/** Request bodies relayed to a machine, bytes (an upload form, a manifest): beyond, 413. */
export const PREVIEW_BODY_LIMIT = 32 * 1024 * 1024;
/** How long the machine may take to send a response's headers, ms; then 504. */
export const UPSTREAM_HEADERS_TIMEOUT_MS = 60_000;
/** A relayed exchange with no byte either way for this long is cut, ms (a WebSocket sends pings). */
export const PREVIEW_IDLE_TIMEOUT_MS = 5 * 60_000;
/** An access decision is reused this long per grant, ms: a page's 50 assets cost one database check. */
export const ACCESS_CACHE_MS = 5_000;
/** A machine's SSH endpoint is reused this long, ms. */
const ENDPOINT_CACHE_MS = 30_000;
/** Access decisions kept at most (a map per process, oldest dropped first). */
const ACCESS_CACHE_ENTRIES = 10_000;

/** Headers of one hop only: never relayed (RFC 9110 §7.6.1), plus what only Labdeck may set. */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "x-labdeck-client-address",
]);

export interface PreviewDeps {
  secret: Buffer;
  /** The preview base, read per request (server.ts knows its port once listening). */
  base: () => PreviewBase;
  access: PreviewAccess;
  /** The machine's SSH endpoint; null when the session or machine does not exist or is not live. */
  endpoint: (sessionId: string, machine: string) => Promise<SshEndpoint | null>;
  tunnels?: TunnelPool;
  log: Logger;
}

type Refusal = { status: number; code: string };

export class PreviewProxy {
  readonly tunnels: TunnelPool;
  private readonly decisions = new Map<string, { access: "owner" | "watch" | null; until: number }>();
  private readonly endpoints = new Map<string, { endpoint: Promise<SshEndpoint | null>; until: number }>();

  constructor(private readonly deps: PreviewDeps) {
    this.tunnels = deps.tunnels ?? new TunnelPool();
  }

  /** Answers the request if its Host is a preview host; false when it is Labdeck's. */
  handleRequest(req: IncomingMessage, res: ServerResponse): boolean {
    const base = this.deps.base();
    const host = previewHostOf(base, req.headers.host);
    if (!host) return false;
    void this.request(base, host.target, req, res).catch((error: Error) => {
      this.deps.log.error({ err: error.message }, "preview request failed");
      refuse(req, res, { status: 502, code: "previewUnreachable" });
    });
    return true;
  }

  /** Relays a WebSocket upgrade if its Host is a preview host; false when it is Labdeck's. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const base = this.deps.base();
    const host = previewHostOf(base, req.headers.host);
    if (!host) return false;
    socket.on("error", () => socket.destroy());
    void this.upgrade(base, host.target, req, socket, head).catch((error: Error) => {
      this.deps.log.error({ err: error.message }, "preview upgrade failed");
      refuseSocket(socket, 502);
    });
    return true;
  }

  closeAll(): void {
    this.tunnels.closeAll();
  }

  private async request(base: PreviewBase, target: PreviewTarget | null, req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!target) return refuse(req, res, { status: 404, code: "previewNotFound" });
    const url = new URL(req.url ?? "/", "http://preview");
    if (url.pathname.startsWith(PREVIEW_RESERVED_PREFIX)) return this.reserved(base, target, url, req, res);
    const { claims, shadowed } = this.grantOf(base, target, req);
    // A cookie of the grant's name that is not this origin's grant: clear the parent-domain one.
    const clear = shadowed ? [clearParentCookie(grantCookieName(base.scheme), base.host)] : [];
    const decided = claims ? await this.decide(claims) : null;
    if (!claims || !decided) return refuse(req, res, { status: 403, code: "previewDenied" }, clear);
    const method = (req.method ?? "GET").toUpperCase();
    if (decided === "watch" && method !== "GET" && method !== "HEAD")
      return refuse(req, res, { status: 403, code: "previewReadOnly" }, clear);
    if (tooLarge(req.headers["content-length"])) return refuse(req, res, { status: 413, code: "bodyTooLarge" }, clear);
    const stream = await this.stream(target);
    if ("status" in stream) return refuse(req, res, stream, clear);

    const upstream = http.request({
      method,
      path: req.url,
      headers: forwardedHeaders(req.headers, base.scheme),
      createConnection: () => stream.stream as never,
    });
    let answered = false;
    const headersTimer = setTimeout(() => {
      upstream.destroy();
      if (!answered) refuse(req, res, { status: 504, code: "previewTimeout" });
    }, UPSTREAM_HEADERS_TIMEOUT_MS);
    const idle = idleCutter(() => {
      upstream.destroy();
      res.destroy();
    });
    upstream.on("response", (answer) => {
      answered = true;
      clearTimeout(headersTimer);
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, responseHeaders(answer.headers, grantCookieName(base.scheme), clear));
      answer.on("data", idle.touch);
      answer.pipe(res);
    });
    upstream.on("error", () => {
      clearTimeout(headersTimer);
      idle.stop();
      if (!answered) refuse(req, res, { status: 502, code: "previewUnreachable" });
      else res.destroy();
    });
    res.on("close", () => {
      clearTimeout(headersTimer);
      idle.stop();
      upstream.destroy();
      stream.stream.destroy();
    });
    // The body, counted: past the limit the exchange ends with 413 (nothing more is relayed).
    let seen = 0;
    req.on("data", (chunk: Buffer) => {
      idle.touch();
      seen += chunk.length;
      if (seen > PREVIEW_BODY_LIMIT) {
        req.unpipe(upstream);
        upstream.destroy();
        if (!answered) {
          answered = true;
          refuse(req, res, { status: 413, code: "bodyTooLarge" });
        }
      }
    });
    req.pipe(upstream);
  }

  private async upgrade(
    base: PreviewBase,
    target: PreviewTarget | null,
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
  ): Promise<void> {
    if (!target) return refuseSocket(socket, 404);
    // A WebSocket from another page (another preview of the same site included) is refused: the
    // grant cookie would ride along with it.
    if (req.headers.origin !== previewOrigin(base, target)) return refuseSocket(socket, 403);
    const { claims } = this.grantOf(base, target, req);
    const decided = claims ? await this.decide(claims) : null;
    if (!decided || decided !== "owner") return refuseSocket(socket, 403);
    const opened = await this.stream(target);
    if ("status" in opened) return refuseSocket(socket, opened.status);
    const stream = opened.stream;
    const headers = forwardedHeaders(req.headers, base.scheme);
    headers.connection = "Upgrade";
    headers.upgrade = req.headers.upgrade ?? "websocket";
    const upstream = http.request({ method: req.method, path: req.url, headers, createConnection: () => stream as never });
    const headersTimer = setTimeout(() => {
      upstream.destroy();
      refuseSocket(socket, 504);
    }, UPSTREAM_HEADERS_TIMEOUT_MS);
    socket.once("close", () => {
      clearTimeout(headersTimer);
      upstream.destroy();
      stream.destroy();
    });
    upstream.on("error", () => {
      clearTimeout(headersTimer);
      refuseSocket(socket, 502);
    });
    upstream.on("response", (answer) => {
      // The machine answered without switching protocols: relay its answer and end.
      clearTimeout(headersTimer);
      socket.write(statusLine(answer) + rawHeaderLines(answer.rawHeaders, grantCookieName(base.scheme)) + "\r\n");
      answer.pipe(socket);
    });
    upstream.on("upgrade", (answer, upSocket, upHead) => {
      clearTimeout(headersTimer);
      socket.write(statusLine(answer) + rawHeaderLines(answer.rawHeaders, grantCookieName(base.scheme)) + "\r\n");
      if (upHead.length > 0) socket.write(upHead);
      if (head.length > 0) upSocket.write(head);
      const idle = idleCutter(() => {
        socket.destroy();
        upSocket.destroy();
      });
      socket.on("data", idle.touch);
      upSocket.on("data", idle.touch);
      upSocket.on("error", () => socket.destroy());
      upSocket.on("close", () => {
        idle.stop();
        socket.destroy();
      });
      socket.on("close", () => {
        idle.stop();
        upSocket.destroy();
      });
      upSocket.pipe(socket);
      socket.pipe(upSocket);
    });
    upstream.end();
  }

  /** `/__labdeck/enter?code=…&`: the code for this origin becomes its grant cookie, then the page. */
  private async reserved(base: PreviewBase, target: PreviewTarget, url: URL, req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (url.pathname !== PREVIEW_ENTER_PATH || (req.method !== "GET" && req.method !== "HEAD"))
      return refuse(req, res, { status: 404, code: "previewNotFound" });
    const code = url.searchParams.get("code") ?? "";
    const claims = verifyPreview(this.deps.secret, "code", code, target);
    if (!claims || !(await this.decide(claims, true))) return refuse(req, res, { status: 403, code: "previewDenied" });
    const next = PreviewPath.safeParse(claims.next ?? "/");
    const grant = signPreview(this.deps.secret, { ...claims, k: "grant", next: undefined });
    const cookie = [
      `${grantCookieName(base.scheme)}=${grant}`,
      "Path=/",
      "HttpOnly",
      "SameSite=Lax",
      `Max-Age=${Math.floor(PREVIEW_GRANT_TTL_MS / 1000)}`,
      ...(base.scheme === "https" ? ["Secure"] : []),
    ].join("; ");
    res.writeHead(303, {
      location: next.success ? next.data : "/",
      // A cookie of this name a page set for the parent preview domain would come first and shadow
      // the grant in pages' scripts and other servers' eyes: it goes.
      "set-cookie": [cookie, clearParentCookie(grantCookieName(base.scheme), base.host)],
      "cache-control": "no-store",
      // The code is in this URL: it is not passed on to the page's first request.
      "referrer-policy": "no-referrer",
      "content-length": 0,
    });
    res.end();
  }

  /** The grant for this origin among every cookie of the grant's name, and whether others came with it. */
  private grantOf(base: PreviewBase, target: PreviewTarget, req: IncomingMessage): { claims: PreviewClaims | null; shadowed: boolean } {
    const values = cookieValues(req.headers.cookie, grantCookieName(base.scheme));
    return chooseGrant(values, (value) => verifyPreview(this.deps.secret, "grant", value, target));
  }

  /** The access the claims still have (database, cached per claims for ACCESS_CACHE_MS unless `fresh`). */
  private async decide(claims: PreviewClaims, fresh = false): Promise<"owner" | "watch" | null> {
    const key = `${claims.sub}|${claims.si}|${claims.sid}|${claims.m}|${claims.p}|${claims.access}`;
    const now = Date.now();
    const cached = this.decisions.get(key);
    if (!fresh && cached && cached.until > now) return cached.access;
    const access = await this.deps.access(claims);
    if (this.decisions.size >= ACCESS_CACHE_ENTRIES) this.decisions.delete(this.decisions.keys().next().value!);
    this.decisions.set(key, { access, until: now + ACCESS_CACHE_MS });
    return access;
  }

  private async stream(target: PreviewTarget): Promise<{ stream: Duplex } | Refusal> {
    const key = `${target.sessionId}/${target.machine}`;
    const now = Date.now();
    let entry = this.endpoints.get(key);
    if (!entry || entry.until <= now) {
      entry = { endpoint: this.deps.endpoint(target.sessionId, target.machine), until: now + ENDPOINT_CACHE_MS };
      this.endpoints.set(key, entry);
      entry.endpoint.catch(() => this.endpoints.delete(key));
    }
    const endpoint = await entry.endpoint.catch(() => null);
    if (!endpoint) {
      this.endpoints.delete(key);
      return { status: 404, code: "previewNotFound" };
    }
    try {
      return { stream: await this.tunnels.open(endpoint, target.port) };
    } catch (error) {
      if (!(error instanceof TunnelError)) throw error;
      this.deps.log.info({ machine: target.machine, port: target.port, kind: error.kind }, "preview stream not opened");
      if (error.kind === "refused") return { status: 502, code: "previewRefused" };
      if (error.kind === "timeout") return { status: 504, code: "previewTimeout" };
      if (error.kind === "busy") return { status: 503, code: "previewUnreachable" };
      return { status: 502, code: "previewUnreachable" };
    }
  }
}

function tooLarge(contentLength: string | undefined): boolean {
  if (contentLength === undefined || contentLength === "") return false;
  const n = Number(contentLength);
  return !Number.isFinite(n) || n > PREVIEW_BODY_LIMIT;
}

/** What the machine gets: the browser's headers minus hop-by-hop ones, with only the page's own cookies. */
function forwardedHeaders(headers: IncomingHttpHeaders, scheme: string): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    out[name] = value;
  }
  const cookie = machineCookieHeader(headers.cookie);
  if (cookie) out.cookie = cookie;
  else delete out.cookie;
  out["x-forwarded-proto"] = scheme;
  out["x-forwarded-host"] = headers.host ?? "";
  out.connection = "close";
  return out;
}

/** What the browser gets: the machine's headers minus hop-by-hop ones and any cookie named like the grant; plus Labdeck's `setCookie`. */
function responseHeaders(headers: IncomingHttpHeaders, grantCookie: string, setCookie: string[] = []): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = setCookie.length > 0 ? { "set-cookie": setCookie } : {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    if (name === "set-cookie") {
      const kept = (value as string[]).filter((c) => c.slice(0, c.indexOf("=")).trim() !== grantCookie);
      if (kept.length + setCookie.length > 0) out[name] = [...kept, ...setCookie];
      continue;
    }
    out[name] = value;
  }
  return out;
}

function statusLine(answer: IncomingMessage): string {
  return `HTTP/1.1 ${answer.statusCode ?? 502} ${answer.statusMessage ?? ""}\r\n`;
}

/** Raw response header lines for an upgrade answer (hop-by-hop ones kept: they are the switch), minus the grant cookie. */
function rawHeaderLines(raw: string[], grantCookie: string): string {
  let lines = "";
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    const value = raw[i + 1]!;
    if (/[\r\n]/.test(name) || /[\r\n]/.test(value)) continue;
    if (name.toLowerCase() === "set-cookie" && value.slice(0, value.indexOf("=")).trim() === grantCookie) continue;
    lines += `${name}: ${value}\r\n`;
  }
  return lines;
}

function idleCutter(cut: () => void): { touch: () => void; stop: () => void } {
  let timer: NodeJS.Timeout | null = setTimeout(cut, PREVIEW_IDLE_TIMEOUT_MS);
  timer.unref();
  return {
    touch: () => timer?.refresh(),
    stop: () => {
      if (timer) clearTimeout(timer);
      timer = null;
    },
  };
}

/** A small page in the browser's language; the code is in a header for scripts and tests. */
function refuse(req: IncomingMessage, res: ServerResponse, refusal: Refusal, setCookie: string[] = []): void {
  if (res.headersSent) return void res.destroy();
  const locale = localeFromHeaders(new Headers({ cookie: String(req.headers.cookie ?? "") }));
  const message = errorMessage(locale, refusal.code);
  const body = `<!doctype html><meta charset="utf-8"><title>Labdeck</title><p>${escapeHtml(message)}</p>\n`;
  // A body not read (a refused upload) would be taken for the next request on this connection.
  const unread = !req.complete;
  res.writeHead(refusal.status, {
    "content-type": "text/html; charset=utf-8",
    "content-length": Buffer.byteLength(body),
    "cache-control": "no-store",
    "x-labdeck-preview-error": refusal.code,
    "content-security-policy": "default-src 'none'",
    ...(setCookie.length > 0 ? { "set-cookie": setCookie } : {}),
    ...(unread ? { connection: "close" } : {}),
  });
  if (unread) res.once("finish", () => req.socket.destroy());
  res.end(body);
}

function refuseSocket(socket: Duplex, status: number): void {
  if (socket.destroyed) return;
  socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? ""}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
