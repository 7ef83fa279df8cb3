/**
 * Serves the app for the e2e run: three real sshd hosts in network namespaces, a throw-away data
 * directory (embedded PostgreSQL), and server.ts in production mode (run `next build` first).
 * The first admin's login, which the server prints once at its first start, is kept in
 * adminLoginFile(port) for the tests (e2e/accounts.ts). On SIGTERM/SIGINT it stops the server and
 * removes the hosts.
 */
import { spawn } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { z } from "zod";
import { copyMigratedDataDir } from "../server/testing/db-template";
import { createNetnsHosts, writeStaticHostsFile } from "../server/testing/netns-hosts";
import { acceptFirstAdminLink, adminLoginFile } from "./accounts";

/** Subnet of the e2e hosts (10.213.<n>.0/24); the unit tests use others. */
const E2E_SUBNET = 60;

const Args = z.object({
  port: z.coerce.number().int().min(1).max(65535),
  /** Another subnet (and host set) for a run beside Playwright's (the Firefox test uses 62). */
  subnet: z.coerce.number().int().min(1).max(254).default(E2E_SUBNET),
});
const args = Args.parse(parseArgs({ options: { port: { type: "string" }, subnet: { type: "string" } } }).values);

const dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-e2e-"));
await fs.chmod(dir, 0o711); // embedded PostgreSQL runs as user postgres and must enter it
const hosts = await createNetnsHosts({
  id: args.subnet === E2E_SUBNET ? "e2e" : `e2e${args.subnet}`,
  names: ["controlplane", "node01", "node02"],
  subnet: args.subnet,
  dir: path.join(dir, "hosts"),
});
const hostsFile = path.join(dir, "hosts.json");
await writeStaticHostsFile(hosts, hostsFile, "shared");
// The server finds its embedded database migrated (a copy of the test template), as after a first start.
await copyMigratedDataDir(path.join(dir, "data"));

const server = spawn(process.execPath, ["--import", "tsx", "server.ts"], {
  env: {
    ...process.env,
    NODE_ENV: "production",
    PORT: String(args.port),
    HOST: "127.0.0.1",
    LABDECK_DATA_DIR: path.join(dir, "data"),
    LABDECK_PG_PORT: String(args.port + 1),
    LABDECK_HOSTS_FILE: hostsFile,
    // netns sshd hosts on this machine: the single-user demo mode, named as such.
    LABDECK_MACHINES: "netns-demo",
  },
  stdio: ["ignore", "pipe", "inherit"],
});
const adminFile = adminLoginFile(args.port);
await fs.rm(adminFile, { force: true });
/** Server output until the first admin's login has been seen in it. */
let banner: string | null = "";
server.stdout.on("data", (chunk: Buffer) => {
  process.stdout.write(chunk);
  if (banner === null) return;
  banner += chunk.toString("utf8");
  const email = /^\s+email:\s+(\S+)$/m.exec(banner)?.[1];
  const link = /^\s+link:\s+(\S+)$/m.exec(banner)?.[1];
  if (email && link) {
    banner = null;
    // The first admin's one-time link: followed once, as the admin would, to set a password.
    void acceptFirstAdminLink(link, email).then(
      (login) => fs.writeFile(adminFile, JSON.stringify(login), { mode: 0o600 }),
      (error: Error) => console.error(`e2e/serve.ts: ${error.message}`),
    );
  }
});

let stopping = false;
async function stop(code: number) {
  if (stopping) return;
  stopping = true;
  if (server.exitCode === null) {
    server.kill("SIGTERM");
    await new Promise((r) => server.once("exit", r));
  }
  await hosts.destroy();
  await fs.rm(adminFile, { force: true });
  await fs.rm(dir, { recursive: true, force: true });
  process.exit(code);
}
server.on("exit", (code) => void stop(code ?? 1));
process.on("SIGTERM", () => void stop(0));
process.on("SIGINT", () => void stop(0));
