/**
 * Web preview benchmark: time to first byte and throughput of a download from a web service on a
 * lab machine (netns sshd host, its 127.0.0.1), through the web preview (curl -> Labdeck's
 * preview proxy -> ssh2 forwardOut -> sshd -> the service) against `curl` through OpenSSH port
 * forwarding (`ssh -L`, the same machine, key and sshd), in one run, interleaved. Both sides are
 * curl, a new TCP connection per request; the preview also checks the grant cookie (its database
 * decision cached for ACCESS_CACHE_MS, as in production).
 *
 *   flock /tmp/labdeck-test.lock npx tsx bench/preview.ts [--requests 40] [--mib 50] [--rounds 3]
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs/promises";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { z } from "zod";
import { benchFlags } from "./lib/flags";

const SUBNET = 69; // third octet of the hosts' 10.213.S.0/24
const WEB_PORT = 18080; // the service's port on node01
const SSH_FORWARD_WAIT_MS = 10_000; // longest wait for ssh -L to listen, ms

const Flags = z.object({
  requests: z.coerce.number().int().min(1).max(10_000).default(40),
  mib: z.coerce.number().int().min(1).max(4096).default(50),
  rounds: z.coerce.number().int().min(1).max(20).default(3),
});
const opts = benchFlags(Flags, "usage: npx tsx bench/preview.ts [--requests N] [--mib N] [--rounds N]");
process.env.LOG_LEVEL ??= "warn";

const { startTestStack, freePort } = await import("../server/testing/stack");
const { startLabWebServer } = await import("../server/testing/lab-web-server");
const { machineEndpoint } = await import("../server/sessions/lab-sessions");
const { createUserWithPassword } = await import("../server/auth/users");
const { PreviewProxy } = await import("../server/preview/proxy");
const { previewAccess } = await import("../server/preview/access");
const { previewOrigin } = await import("../server/preview/address");
const { grantCookieName, signPreview } = await import("../server/preview/grant");
const { stats, MIB } = await import("./lib/measure");
const { log } = await import("../server/log");

const exec = promisify(execFile);

/** One curl: seconds to the first byte and in all, bytes received. */
async function curl(url: string, extra: string[] = []): Promise<{ firstByte: number; total: number; bytes: number; status: number }> {
  const { stdout } = await exec(
    "curl",
    ["-s", "-o", "/dev/null", "-w", "%{http_code} %{time_starttransfer} %{time_total} %{size_download}", ...extra, url],
    { maxBuffer: 1024 * 1024 },
  );
  const [status, firstByte, total, bytes] = stdout.trim().split(" ").map(Number);
  return { status: status!, firstByte: firstByte!, total: total!, bytes: bytes! };
}

async function waitListening(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, "127.0.0.1", () => (s.destroy(), resolve(true)));
      s.on("error", () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const stack = await startTestStack({ subnet: SUBNET });
const dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-bench-preview-"));
let sshForward: ChildProcess | null = null;
let stopWeb: (() => Promise<void>) | null = null;
let server: http.Server | null = null;
let proxy: InstanceType<typeof PreviewProxy> | null = null;
try {
  const user = await createUserWithPassword(stack.db, stack.auth, {
    email: "bench@preview.test",
    name: "bench",
    role: "learner",
    password: "bench password 123",
  });
  // A real sign-in: the preview's access check reads its Session row.
  await stack.auth.api.signInEmail({ body: { email: user.email, password: "bench password 123" } });
  const signInRow = await stack.db.session.findFirstOrThrow({ where: { userId: user.id }, select: { id: true } });
  const sessionId = await stack.startSession(user.id);
  const endpoint = (await machineEndpoint(stack.db, sessionId, "node01"))!;
  stopWeb = await startLabWebServer(stack.pool, endpoint, WEB_PORT);

  // The preview, as server.ts runs it (its own HTTP server here: no Next.js in the way).
  const port = await freePort();
  const base = { scheme: "http" as const, host: "preview.localhost", port: String(port) };
  proxy = new PreviewProxy({
    secret: stack.secret,
    base: () => base,
    access: previewAccess(stack.db),
    endpoint: (sid, m) => machineEndpoint(stack.db, sid, m),
    log,
  });
  const p = proxy;
  server = http.createServer((req, res) => void (p.handleRequest(req, res) || res.writeHead(404).end()));
  await new Promise<void>((resolve) => server!.listen(port, "127.0.0.1", resolve));
  const target = { sessionId, machine: "node01", port: WEB_PORT };
  const origin = previewOrigin(base, target)!;
  const grant = signPreview(stack.secret, {
    k: "grant",
    sid: sessionId,
    m: "node01",
    p: WEB_PORT,
    sub: user.id,
    si: signInRow.id,
    access: "owner",
  });
  const host = new URL(origin).hostname;
  const viaPreview = (pathname: string) =>
    curl(`${origin}${pathname}`, ["--resolve", `${host}:${port}:127.0.0.1`, "-H", `Cookie: ${grantCookieName("http")}=${grant}`]);

  // OpenSSH's own forward of the same port, with the machine's key and pinned host key.
  const keyFile = path.join(dir, "key");
  await fs.writeFile(keyFile, endpoint.privateKey.endsWith("\n") ? endpoint.privateKey : `${endpoint.privateKey}\n`, { mode: 0o600 });
  const knownHosts = path.join(dir, "known_hosts");
  // OpenSSH names a host on port 22 without brackets.
  await fs.writeFile(knownHosts, `${endpoint.port === 22 ? endpoint.host : `[${endpoint.host}]:${endpoint.port}`} ${endpoint.hostKey}\n`);
  const localPort = await freePort();
  sshForward = spawn(
    "ssh",
    [
      "-N",
      "-i",
      keyFile,
      "-o",
      `UserKnownHostsFile=${knownHosts}`,
      "-o",
      "StrictHostKeyChecking=yes",
      "-o",
      "BatchMode=yes",
      "-o",
      "ExitOnForwardFailure=yes",
      "-p",
      String(endpoint.port),
      "-L",
      `127.0.0.1:${localPort}:127.0.0.1:${WEB_PORT}`,
      `${endpoint.user}@${endpoint.host}`,
    ],
    { stdio: ["ignore", "ignore", "inherit"] },
  );
  await waitListening(localPort, SSH_FORWARD_WAIT_MS);
  const viaSsh = (pathname: string) => curl(`http://127.0.0.1:${localPort}${pathname}`);

  // Warm both paths (the preview's SSH connection and access decision, ssh's connection).
  const coldPreview = await viaPreview("/");
  const coldSsh = await viaSsh("/");
  if (coldPreview.status !== 200 || coldSsh.status !== 200)
    throw new Error(`warm-up failed: preview ${coldPreview.status}, ssh -L ${coldSsh.status}`);

  const first = { preview: [] as number[], ssh: [] as number[] };
  for (let i = 0; i < opts.requests; i++) {
    for (const [name, fn] of [
      ["preview", viaPreview],
      ["ssh", viaSsh],
    ] as const) {
      const r = await fn("/");
      if (r.status !== 200) throw new Error(`${name}: HTTP ${r.status}`);
      first[name].push(r.firstByte * 1000);
    }
  }
  const bytes = opts.mib * MIB;
  const rate = { preview: [] as number[], ssh: [] as number[] };
  for (let round = 0; round < opts.rounds; round++) {
    for (const [name, fn] of [
      ["preview", viaPreview],
      ["ssh", viaSsh],
    ] as const) {
      const r = await fn(`/bytes?n=${bytes}`);
      if (r.status !== 200 || r.bytes !== bytes) throw new Error(`${name}: HTTP ${r.status}, ${r.bytes} of ${bytes} bytes`);
      rate[name].push(bytes / MIB / r.total);
    }
  }
  const median = (xs: number[]) => stats(xs).p50;
  const fb = { preview: stats(first.preview), ssh: stats(first.ssh) };
  const mibs = { preview: median(rate.preview), ssh: median(rate.ssh) };
  console.log(
    `web preview vs ssh -L, node01:${WEB_PORT} on a netns sshd host, curl for both (${os.cpus().length} cores, ${new Date().toISOString()})`,
  );
  console.log(`first byte (GET /, ${opts.requests} requests each, interleaved, new TCP connection each):`);
  console.log(
    `  preview  p50 ${fb.preview.p50.toFixed(2)} ms  p90 ${fb.preview.p90.toFixed(2)} ms  max ${fb.preview.max.toFixed(2)} ms  (cold, with SSH login: ${(coldPreview.firstByte * 1000).toFixed(1)} ms)`,
  );
  console.log(`  ssh -L   p50 ${fb.ssh.p50.toFixed(2)} ms  p90 ${fb.ssh.p90.toFixed(2)} ms  max ${fb.ssh.max.toFixed(2)} ms`);
  console.log(`  ratio preview/ssh -L p50 ${(fb.preview.p50 / fb.ssh.p50).toFixed(2)}x`);
  console.log(`throughput (${opts.mib} MiB download, median of ${opts.rounds} interleaved rounds):`);
  console.log(`  preview  ${mibs.preview.toFixed(1)} MiB/s  (rounds: ${rate.preview.map((x) => x.toFixed(1)).join(", ")})`);
  console.log(`  ssh -L   ${mibs.ssh.toFixed(1)} MiB/s  (rounds: ${rate.ssh.map((x) => x.toFixed(1)).join(", ")})`);
  console.log(`  ratio preview/ssh -L ${(mibs.preview / mibs.ssh).toFixed(2)}x`);
} finally {
  sshForward?.kill("SIGTERM");
  proxy?.closeAll();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  await stopWeb?.().catch(() => undefined);
  await fs.rm(dir, { recursive: true, force: true });
  await stack.stop();
}
process.exit(0);
