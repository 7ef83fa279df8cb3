/**
 * A real embedded PostgreSQL with the committed migrations, for domain tests that need only the
 * database (no hosts, no gateway): the same parts as the test stack, minus the network. The
 * cluster is a copy of the migrated template (db-template.ts).
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createDb, type Db } from "../db/client";
import { startMigratedTestPostgres } from "./db-template";

export async function startTestDb(): Promise<{ db: Db; url: string; stop(): Promise<void> }> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-db-"));
  await fs.chmod(dir, 0o711); // embedded PostgreSQL runs as user postgres and must enter it
  const embedded = await startMigratedTestPostgres(path.join(dir, "data"));
  const db = createDb(embedded.url);
  return {
    db,
    url: embedded.url,
    async stop() {
      await db.$disconnect();
      await embedded.stop();
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}
