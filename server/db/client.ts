import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { log } from "../log";
import { PrismaClient } from "./generated/client";

export type Db = PrismaClient;

/** Connections per process when LABDECK_DB_POOL_SIZE is not set (node-postgres' own default). */
export const DEFAULT_DB_POOL_SIZE = 10;

/** A Prisma client over node-postgres (driver adapter; no query-engine binary needed). */
export function createDb(url: string, poolSize = DEFAULT_DB_POOL_SIZE): Db {
  return createDbWithPool(url, poolSize).db;
}

/** The same, with the node-postgres pool under it (its counts are the process's pool metrics). */
export function createDbWithPool(url: string, poolSize = DEFAULT_DB_POOL_SIZE): { db: Db; pool: pg.Pool } {
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  // An idle connection the database closed (a restart) must not crash the process: the pool
  // drops it and opens another on the next query.
  pool.on("error", (error: Error & { code?: string }) =>
    log.warn({ code: error.code, err: error.message }, "idle database connection lost"),
  );
  return { db: new PrismaClient({ adapter: new PrismaPg(pool, { disposeExternalPool: true }) }), pool };
}
