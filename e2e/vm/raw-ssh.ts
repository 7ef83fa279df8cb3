/**
 * The VM e2e's baseline: a raw SSH login into a machine of the run's one ready lab session, with
 * the key and pinned host key the server stored (read from its database with its secret), outside
 * the server: what any path that logs in again costs on this host at that moment.
 */
import { createDb } from "../../server/db/client";
import { embeddedPostgresUrl } from "../../server/db/embedded";
import { configureMachineKeys } from "../../server/machines/sealed-keys";
import { loadSecret } from "../../server/secret";
import { machineEndpoint } from "../../server/sessions/lab-sessions";
import { connectSsh, type SshEndpoint } from "../../server/ssh/connect";
import type { VmServer } from "./vm-server";

/** The endpoint of `machine` in the run's most recent ready session. */
export async function machineEndpointOf(server: VmServer, machine: string): Promise<SshEndpoint> {
  const port = Number(new URL(server.url).port) + 1; // vm-server.ts: LABDECK_PG_PORT
  const url = await embeddedPostgresUrl(server.dataDir, port);
  if (!url) throw new Error(`no embedded database in ${server.dataDir}`);
  configureMachineKeys(await loadSecret(server.dataDir));
  const db = createDb(url, 1);
  try {
    const session = await db.labSession.findFirst({ where: { state: "ready" }, orderBy: { createdAt: "desc" } });
    if (!session) throw new Error("no ready session");
    const endpoint = await machineEndpoint(db, session.id, machine);
    if (!endpoint) throw new Error(`no ${machine} in session ${session.id}`);
    return endpoint;
  } finally {
    await db.$disconnect();
  }
}

/** ms from connecting to the end of `true` run over a new SSH connection (pinned host key). */
export async function rawSshLogin(endpoint: SshEndpoint): Promise<number> {
  const began = Date.now();
  const client = await connectSsh(endpoint, 60_000);
  try {
    await new Promise<void>((resolve, reject) => {
      client.exec("true", (error, channel) => {
        if (error) return reject(error);
        channel.on("close", () => resolve()).resume();
      });
    });
    return Date.now() - began;
  } finally {
    client.end();
  }
}
