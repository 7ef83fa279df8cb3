/**
 * The web preview end to end, without a browser: real sshd hosts in network namespaces, a real
 * web service on a machine (started over SSH, on its 127.0.0.1), the real entry route (Fetch
 * Request, as Next calls it), the real proxy on an HTTP server, real better-auth sign-ins and
 * PostgreSQL. Auth matrix (anonymous, other learner, owner, watcher), WebSocket upgrade through
 * the preview, bad input, limits. Run: flock /tmp/labdeck-test.lock npx vitest run server/preview/preview.int.test.ts
 */
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { createUserWithPassword, type UserView } from "../auth/users";
import { parseEnv } from "../config";
import { log } from "../log";
import { setServices } from "../compose/services";
import { machineEndpoint } from "../sessions/lab-sessions";
import { startLabWebServer } from "../testing/lab-web-server";
import { startTestStack, type TestStack } from "../testing/stack";
import { signInCookie } from "../testing/sign-in";
import { createAppServer } from "../http/guard";
import { previewAccess } from "./access";
import { previewOrigin, type PreviewBase } from "./address";
import { grantCookieName, signPreview } from "./grant";
import { ACCESS_CACHE_MS, PREVIEW_BODY_LIMIT, PreviewProxy } from "./proxy";
import * as sessionPreviewRoute from "@/app/api/sessions/[id]/preview/route";
import * as labPreviewRoute from "@/app/api/labs/[slug]/preview/route";

const PASSWORD = "correct horse battery";
const LAB = "hello-terminal";
const WEB_PORT = 18080;
const ACTORS = ["anonymous", "owner", "otherLearner", "watcher"] as const;
type Actor = (typeof ACTORS)[number];

let stack: TestStack;
let proxy: PreviewProxy;
let server: http.Server;
let base: PreviewBase;
let sessionId: string;
let otherSessionId: string;
const users = {} as Record<Exclude<Actor, "anonymous">, UserView>;
const cookies = {} as Record<Actor, string>;
const stops: (() => Promise<void>)[] = [];

const signIn = (email: string) => signInCookie(stack.auth, email, PASSWORD);

/** GET /api/sessions/:id/preview as `actor`. */
function entry(actor: Actor, id: string, query: string): Promise<Response> {
  const headers = new Headers(cookies[actor] ? { cookie: cookies[actor] } : {});
  return sessionPreviewRoute.GET(new Request(`http://127.0.0.1:3000/api/sessions/${id}/preview?${query}`, { headers }), {
    params: Promise.resolve({ id }),
  });
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** A request to the proxy for an absolute preview URL (the Host header is the URL's host). */
function fetchPreview(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: Buffer | string } = {},
): Promise<Answer> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: "127.0.0.1",
        port: (server.address() as { port: number }).port,
        method: init.method ?? "GET",
        path: target.pathname + target.search,
        headers: { host: target.host, ...init.headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(init.body);
  });
}

/** Entry route → code → grant cookie, as the browser follows the redirects. Returns the cookie header and the origin. */
async function enter(
  actor: Actor,
  machine = "node01",
  port = WEB_PORT,
  path = "/",
): Promise<{ cookie: string; origin: string; location: string }> {
  const res = await entry(actor, sessionId, `machine=${machine}&port=${port}&path=${encodeURIComponent(path)}`);
  expect(res.status).toBe(303);
  const location = res.headers.get("location")!;
  const origin = new URL(location).origin;
  expect(origin).toBe(previewOrigin(base, { sessionId, machine, port }));
  const exchanged = await fetchPreview(location);
  expect(exchanged.status).toBe(303);
  expect(exchanged.headers.location).toBe(path);
  const setCookie = exchanged.headers["set-cookie"]![0]!;
  expect(setCookie).toMatch(/HttpOnly/);
  expect(setCookie).toMatch(/SameSite=Lax/);
  expect(setCookie).not.toMatch(/Domain=/i); // host-only: no other preview (or Labdeck) gets it
  return { cookie: setCookie.split(";")[0]!, origin, location };
}

beforeAll(async () => {
  stack = await startTestStack({ subnet: 111, terminalAuth: "sign-in" });
  const env = parseEnv({ NODE_ENV: "test", LABDECK_DATA_DIR: "/nonexistent", HOST: "127.0.0.1", PORT: "3000" });
  // The app's server as server.ts builds it (its header limits, the preview first), with Next.js
  // replaced by a 404 "labdeck".
  server = createAppServer({
    ops: () => false,
    allowedOrigin: () => "http://127.0.0.1:3000",
    handle: (_req, res) => res.writeHead(404).end("labdeck"),
    preview: (req, res) => proxy.handleRequest(req, res),
  });
  server.on("upgrade", (req, socket, head) => {
    if (!proxy.handleUpgrade(req, socket, head)) socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = { scheme: "http", host: "preview.localhost", port: String((server.address() as { port: number }).port) };
  proxy = new PreviewProxy({
    secret: stack.secret,
    base: () => base,
    access: previewAccess(stack.db),
    endpoint: (sid, m) => machineEndpoint(stack.db, sid, m),
    log,
  });
  setServices({ ...stack, env, refuseUnbuiltImage: async () => null, previewBase: () => base });
  const make = (key: string, role: "learner" | "instructor") =>
    createUserWithPassword(stack.db, stack.auth, { email: `${key.toLowerCase()}@preview.test`, name: key, role, password: PASSWORD });
  users.owner = await make("owner", "learner");
  users.otherLearner = await make("otherLearner", "learner");
  users.watcher = await make("watcher", "instructor");
  const cohort = await stack.db.cohort.create({ data: { name: "CKA", labs: [LAB] } });
  await stack.db.cohortMember.createMany({
    data: [
      { cohortId: cohort.id, userId: users.owner.id, role: "learner" },
      { cohortId: cohort.id, userId: users.watcher.id, role: "instructor" },
    ],
  });
  cookies.anonymous = "";
  for (const actor of ACTORS) if (actor !== "anonymous") cookies[actor] = await signIn(users[actor].email);
  sessionId = await stack.startSession(users.owner.id, LAB);
  otherSessionId = await stack.startSession(users.otherLearner.id, LAB);
  for (const machine of ["node01", "node02"])
    stops.push(await startLabWebServer(stack.pool, (await machineEndpoint(stack.db, sessionId, machine))!, WEB_PORT));
}, 180_000);

afterAll(async () => {
  for (const stop of stops) await stop().catch(() => undefined);
  proxy?.closeAll();
  await new Promise((resolve) => server?.close(resolve));
  await stack?.stop();
});

describe("entry route × actors (GET /api/sessions/:id/preview)", () => {
  const expected: Record<Actor, number> = { anonymous: 401, owner: 303, otherLearner: 404, watcher: 303 };
  for (const actor of ACTORS) {
    it(`${actor} → ${expected[actor]}`, async () => {
      const res = await entry(actor, sessionId, `machine=node01&port=${WEB_PORT}&path=/`);
      expect(res.status).toBe(expected[actor]);
      if (res.status === 303)
        expect(res.headers.get("location")).toMatch(
          new RegExp(`^http://${WEB_PORT}-node01-${sessionId}\\.preview\\.localhost:\\d+/__labdeck/enter\\?code=`),
        );
    });
  }

  it("the lab route opens the caller's own session only", async () => {
    const mine = await labPreviewRoute.GET(
      new Request(`http://127.0.0.1:3000/api/labs/${LAB}/preview?machine=node02&port=${WEB_PORT}`, { headers: { cookie: cookies.owner } }),
      { params: Promise.resolve({ slug: LAB }) },
    );
    expect(mine.status).toBe(303);
    expect(new URL(mine.headers.get("location")!).hostname).toBe(`${WEB_PORT}-node02-${sessionId}.preview.localhost`);
    const theirs = await labPreviewRoute.GET(
      new Request(`http://127.0.0.1:3000/api/labs/${LAB}/preview?machine=node02&port=${WEB_PORT}`, {
        headers: { cookie: cookies.otherLearner },
      }),
      { params: Promise.resolve({ slug: LAB }) },
    );
    expect(new URL(theirs.headers.get("location")!).hostname).toBe(`${WEB_PORT}-node02-${otherSessionId}.preview.localhost`);
    const none = await labPreviewRoute.GET(
      new Request(`http://127.0.0.1:3000/api/labs/no-such-lab/preview?machine=node02&port=${WEB_PORT}`, {
        headers: { cookie: cookies.owner },
      }),
      { params: Promise.resolve({ slug: "no-such-lab" }) },
    );
    expect(none.status).toBe(404);
  });

  it("bad input is 400 (port, machine name, path), an unknown machine 404", async () => {
    for (const query of [
      "machine=node01&port=0",
      "machine=node01&port=70000",
      "machine=node01&port=x",
      "machine=NODE01&port=80",
      "machine=node01",
      "machine=node01&port=80&path=//evil.example/",
      "machine=node01&port=80&path=http://evil.example/",
      "machine=node01&port=80&path=/a%0d%0aSet-Cookie:x",
    ]) {
      expect((await entry("owner", sessionId, query)).status, query).toBe(400);
    }
    expect((await entry("owner", sessionId, "machine=node09&port=80")).status).toBe(404);
  });
});

describe("the preview origin × actors", () => {
  it("owner: the machine's page through the preview, on node01 and node02", async () => {
    for (const machine of ["node01", "node02"]) {
      const { cookie, origin } = await enter("owner", machine);
      const page = await fetchPreview(`${origin}/`, { headers: { cookie } });
      expect(page.status).toBe(200);
      expect(page.body.toString()).toContain(`hello from ${machine}`);
    }
  });

  it("anonymous (no grant cookie) → 403, and nothing reaches the machine", async () => {
    const origin = previewOrigin(base, { sessionId, machine: "node01", port: WEB_PORT })!;
    const res = await fetchPreview(`${origin}/headers`);
    expect(res.status).toBe(403);
    expect(res.headers["x-labdeck-preview-error"]).toBe("previewDenied");
  });

  it("another learner → 403 with their own grant (another origin's) and with the owner's Labdeck cookie missing", async () => {
    const res = await entry("otherLearner", otherSessionId, `machine=node01&port=${WEB_PORT}`);
    const theirs = await fetchPreview(res.headers.get("location")!);
    const theirCookie = theirs.headers["set-cookie"]![0]!.split(";")[0]!;
    const ownersOrigin = previewOrigin(base, { sessionId, machine: "node01", port: WEB_PORT })!;
    expect((await fetchPreview(`${ownersOrigin}/`, { headers: { cookie: theirCookie } })).status).toBe(403);
    // Their Labdeck sign-in cookie means nothing on a preview origin.
    expect((await fetchPreview(`${ownersOrigin}/`, { headers: { cookie: cookies.otherLearner } })).status).toBe(403);
    // Nor does the owner's entry code replayed for another port or machine.
    const code = new URL((await entry("owner", sessionId, `machine=node01&port=${WEB_PORT}`)).headers.get("location")!).searchParams.get(
      "code",
    )!;
    const otherPort = previewOrigin(base, { sessionId, machine: "node01", port: WEB_PORT + 1 })!;
    expect((await fetchPreview(`${otherPort}/__labdeck/enter?code=${encodeURIComponent(code)}`)).status).toBe(403);
  });

  it("watcher: may view (GET, HEAD), not post or open WebSockets", async () => {
    const { cookie, origin } = await enter("watcher");
    expect((await fetchPreview(`${origin}/`, { headers: { cookie } })).body.toString()).toContain("hello from node01");
    expect((await fetchPreview(`${origin}/`, { method: "HEAD", headers: { cookie } })).status).toBe(200);
    const post = await fetchPreview(`${origin}/size`, { method: "POST", headers: { cookie }, body: "x" });
    expect(post.status).toBe(403);
    expect(post.headers["x-labdeck-preview-error"]).toBe("previewReadOnly");
    await expect(openSocket(origin, cookie)).rejects.toThrow(/403/);
  });

  it("the machine gets the preview host and the page's own cookies, never the grant; a Set-Cookie named like the grant is dropped", async () => {
    const { cookie, origin } = await enter("owner");
    const echoed = await fetchPreview(`${origin}/headers`, { headers: { cookie: `${cookie}; app=7` } });
    const headers = JSON.parse(echoed.body.toString()) as Record<string, string>;
    expect(headers.host).toBe(new URL(origin).host);
    expect(headers.cookie).toBe("app=7");
    expect(headers["x-forwarded-proto"]).toBe("http");
    const set = await fetchPreview(`${origin}/set-cookie`, { headers: { cookie } });
    expect(set.headers["set-cookie"]).toEqual(["app=1; Path=/"]);
  });

  it("a grant shadowed by a forged parent-domain cookie still counts and the forged one is cleared; 12 × 3.8 KB tossed cookies do not stop the preview", async () => {
    const { cookie, origin } = await enter("owner");
    const name = grantCookieName("http");
    const clear = `${name}=; Domain=${base.host}; Path=/; Max-Age=0`;
    // As a browser sends them: the cookie a page set for Domain=preview.localhost, then the host-only grant.
    const forged = `${name}=forged-by-a-lab-page`;
    const page = await fetchPreview(`${origin}/headers`, { headers: { cookie: `${forged}; ${cookie}; app=7` } });
    expect(page.status).toBe(200);
    expect(page.headers["set-cookie"]).toEqual([clear]);
    expect((JSON.parse(page.body.toString()) as Record<string, string>).cookie).toBe("app=7");
    // With only the forged one: refused, and cleared so the next entry link works.
    const refused = await fetchPreview(`${origin}/`, { headers: { cookie: forged } });
    expect(refused.status).toBe(403);
    expect(refused.headers["set-cookie"]).toEqual([clear]);
    // A fresh entry link clears it too.
    const entered = await fetchPreview((await entry("owner", sessionId, `machine=node01&port=${WEB_PORT}`)).headers.get("location")!, {
      headers: { cookie: forged },
    });
    expect(entered.status).toBe(303);
    expect(entered.headers["set-cookie"]).toContain(clear);
    // 12 tossed cookies of 3.8 KB (46 KB, past Node's 16 KiB default): the page still comes; the
    // machine is sent no cookies rather than more than 8 KiB of them.
    const tossed = Array.from({ length: 12 }, (_, i) => `tossed${i}=${"x".repeat(3800)}`).join("; ");
    const big = await fetchPreview(`${origin}/headers`, { headers: { cookie: `${tossed}; ${forged}; ${cookie}; app=7` } });
    expect(big.status).toBe(200);
    expect((JSON.parse(big.body.toString()) as Record<string, string>).cookie).toBeUndefined();
    expect((await fetchPreview(`${origin}/`, { headers: { cookie: `${tossed}; ${cookie}` } })).body.toString()).toContain(
      "hello from node01",
    );
    // Labdeck's own routes on the same server answer such a head with 431 themselves.
    expect((await fetchPreview("http://127.0.0.1/", { headers: { cookie: tossed } })).status).toBe(431);
  });

  it("a POST body goes through; one over the limit is 413", async () => {
    const { cookie, origin } = await enter("owner");
    const body = Buffer.alloc(3 * 1024 * 1024, 1);
    const ok = await fetchPreview(`${origin}/size`, {
      method: "POST",
      headers: { cookie, "content-type": "application/octet-stream" },
      body,
    });
    expect(ok.body.toString()).toBe(String(body.length));
    const big = await fetchPreview(`${origin}/size`, {
      method: "POST",
      headers: { cookie, "content-length": String(PREVIEW_BODY_LIMIT + 1) },
    });
    expect(big.status).toBe(413);
  });

  it("a download arrives byte for byte", async () => {
    const { cookie, origin } = await enter("owner");
    const res = await fetchPreview(`${origin}/bytes?n=${8 * 1024 * 1024 + 7}`, { headers: { cookie } });
    expect(res.status).toBe(200);
    expect(res.body.length).toBe(8 * 1024 * 1024 + 7);
    expect(res.body.every((b) => b === 120)).toBe(true);
  });

  it("a port nothing listens on is 502 with a clear message; a host that names nothing is 404", async () => {
    const { cookie, origin } = await enter("owner", "node01", 18099);
    const res = await fetchPreview(`${origin}/`, { headers: { cookie } });
    expect(res.status).toBe(502);
    expect(res.headers["x-labdeck-preview-error"]).toBe("previewRefused");
    expect(res.body.toString()).toContain("待ち受けているものがありません");
    for (const host of [
      `nonsense.preview.localhost`,
      `0-node01-${sessionId}.preview.localhost`,
      `a.b.preview.localhost`,
      "preview.localhost",
    ]) {
      expect((await fetchPreview(`http://${host}/`)).status, host).toBe(404);
    }
    // Not a preview host at all: left to Labdeck (here the test's 404 "labdeck").
    expect((await fetchPreview("http://127.0.0.1/")).body.toString()).toBe("labdeck");
  });

  it("forged, expired and mismatched codes and grants are refused", async () => {
    const target = { sessionId, machine: "node01", port: WEB_PORT };
    const origin = previewOrigin(base, target)!;
    const signInRow = await stack.db.session.findFirstOrThrow({ where: { userId: users.owner.id } });
    const claims = { sid: sessionId, m: "node01", p: WEB_PORT, sub: users.owner.id, si: signInRow.id, access: "owner" as const };
    const expired = signPreview(stack.secret, { ...claims, k: "code" }, Date.now() - 120_000);
    expect((await fetchPreview(`${origin}/__labdeck/enter?code=${encodeURIComponent(expired)}`)).status).toBe(403);
    const forged = signPreview(Buffer.alloc(32, 7), { ...claims, k: "code" });
    expect((await fetchPreview(`${origin}/__labdeck/enter?code=${encodeURIComponent(forged)}`)).status).toBe(403);
    // A grant is not a code, and a code is not a grant.
    const grant = signPreview(stack.secret, { ...claims, k: "grant" });
    expect((await fetchPreview(`${origin}/__labdeck/enter?code=${encodeURIComponent(grant)}`)).status).toBe(403);
    const code = signPreview(stack.secret, { ...claims, k: "code" });
    expect((await fetchPreview(`${origin}/`, { headers: { cookie: `${grantCookieName("http")}=${code}` } })).status).toBe(403);
    // A watcher's grant claiming the owner's access.
    const lie = signPreview(stack.secret, { ...claims, k: "grant", sub: users.watcher.id });
    expect((await fetchPreview(`${origin}/`, { headers: { cookie: `${grantCookieName("http")}=${lie}` } })).status).toBe(403);
    expect((await fetchPreview(`${origin}/__labdeck/other`)).status).toBe(404);
    expect((await fetchPreview(`${origin}/__labdeck/enter?code=garbage`)).status).toBe(403);
  });

  it("signing out ends the preview (within the access cache's few seconds)", async () => {
    const fresh = await signIn(users.owner.email);
    const saved = cookies.owner;
    cookies.owner = fresh;
    const { cookie, origin } = await enter("owner");
    cookies.owner = saved;
    expect((await fetchPreview(`${origin}/`, { headers: { cookie } })).status).toBe(200);
    const decided = Date.now(); // the proxy's access decision for this grant is cached since then at the latest
    await stack.auth.api.signOut({ headers: new Headers({ cookie: fresh }) });
    // Time passing is what is tested: a cached decision lives ACCESS_CACHE_MS, then is looked up again.
    await new Promise((r) => setTimeout(r, decided + ACCESS_CACHE_MS + 1 - Date.now()));
    expect((await fetchPreview(`${origin}/`, { headers: { cookie } })).status).toBe(403);
  });
});

/** Opens a WebSocket to `origin` through the proxy; resolves once open. */
function openSocket(origin: string, cookie: string, originHeader: string = origin): Promise<WebSocket> {
  const port = (server.address() as { port: number }).port;
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/socket`, { headers: { host: new URL(origin).host, cookie, origin: originHeader } });
    ws.once("open", () => resolve(ws));
    ws.once("unexpected-response", (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
    ws.once("error", reject);
  });
}

describe("WebSockets through the preview", () => {
  it("the owner's socket reaches the machine's service and echoes, text and binary", async () => {
    const { cookie, origin } = await enter("owner", "node02");
    const ws = await openSocket(origin, cookie);
    const replies: string[] = [];
    const done = new Promise<void>((resolve) =>
      ws.on("message", (data, binary) => {
        replies.push(binary ? `bin:${(data as Buffer).length}` : data.toString());
        if (replies.length === 2) resolve();
      }),
    );
    ws.send("こんにちは node02");
    ws.send(Buffer.alloc(200_000, 3));
    await done;
    expect(replies).toEqual(["こんにちは node02", "bin:200000"]);
    ws.close();
  });

  it("refused: no grant, another origin's page, another preview's Origin", async () => {
    const { cookie, origin } = await enter("owner", "node02");
    await expect(openSocket(origin, "")).rejects.toThrow(/403/);
    await expect(openSocket(origin, cookie, "http://127.0.0.1:3000")).rejects.toThrow(/403/);
    await expect(openSocket(origin, cookie, previewOrigin(base, { sessionId, machine: "node01", port: WEB_PORT })!)).rejects.toThrow(/403/);
  });
});
