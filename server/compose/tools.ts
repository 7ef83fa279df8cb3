/**
 * What the operators' CLI (server/cli/) composes: the platform's database (the running server's,
 * DATABASE_URL or the embedded PostgreSQL of LABDECK_DATA_DIR; started for the moment when the
 * server is not running), and on it the event bus and the labs, so a command's changes reach
 * open pages as the server's own do.
 */
import pg from "pg";
import pino, { type Logger } from "pino";
import type { Env } from "../config";
import { createDb, type Db } from "../db/client";
import { embeddedPostgresUrl, startEmbeddedPostgres } from "../db/embedded";
import { migrateDeploy } from "../db/migrate";
import { EventBus } from "../events/bus";
import { LabCatalog } from "../labs/catalog";
import type { PlatformBus, PlatformPayloads } from "./services";

export interface Tools {
  db: Db;
  bus: PlatformBus;
  labs: LabCatalog;
  log: Logger;
  close(): Promise<void>;
}

/** The database and what a CLI command needs on it; close() leaves a running server's database running. */
export async function openTools(env: Env, labsDir = env.LABDECK_LABS_DIR): Promise<Tools> {
  const database = await openDatabase(env);
  const db = createDb(database.url);
  // Logs go to stderr: stdout is the command's answer.
  const log = pino({ level: env.LOG_LEVEL }, pino.destination(2));
  const bus = new EventBus<PlatformPayloads>({ db, databaseUrl: database.url, log });
  return {
    db,
    bus,
    labs: new LabCatalog(labsDir),
    log,
    async close() {
      await db.$disconnect();
      await database.stop();
    },
  };
}

async function openDatabase(env: Env): Promise<{ url: string; stop(): Promise<void> }> {
  if (env.DATABASE_URL) return { url: env.DATABASE_URL, stop: async () => {} };
  const running = await embeddedPostgresUrl(env.LABDECK_DATA_DIR, env.LABDECK_PG_PORT);
  if (running && (await answers(running))) return { url: running, stop: async () => {} };
  const embedded = await startEmbeddedPostgres(env.LABDECK_DATA_DIR, env.LABDECK_PG_PORT);
  await migrateDeploy(embedded.url);
  return embedded;
}

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}
