/**
 * A process that owns an embedded PostgreSQL, for server/db/embedded.db.test.ts: starts it in the
 * data directory and port given, prints "READY <url>", stops it on SIGTERM. Killing it with
 * SIGKILL is the crashed server the test plays.
 *
 *   node --import tsx server/testing/embedded-owner.ts <data dir> <port>
 */
import { startEmbeddedPostgres } from "../db/embedded";

const [dataDir, port] = process.argv.slice(2);
const db = await startEmbeddedPostgres(dataDir!, Number(port));
process.stdout.write(`READY ${db.url}\n`);
process.on("SIGTERM", () => void db.stop().then(() => process.exit(0)));
setInterval(() => undefined, 60_000);
