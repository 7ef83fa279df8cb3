import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(import.meta.url);

/**
 * Applies committed migrations (prisma/migrations) with `prisma migrate deploy`. The Prisma CLI
 * runs its wasm schema engine through the driver adapter in prisma.config.ts, fully offline.
 */
export async function migrateDeploy(databaseUrl: string, cwd = process.cwd()): Promise<void> {
  const cli = path.join(path.dirname(require.resolve("prisma/package.json")), "build", "index.js");
  const output: Buffer[] = [];
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(process.execPath, [cli, "migrate", "deploy"], {
      cwd,
      env: { ...process.env, DATABASE_URL: databaseUrl, PRISMA_HIDE_UPDATE_MESSAGE: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout.on("data", (b: Buffer) => output.push(b));
    child.stderr.on("data", (b: Buffer) => output.push(b));
    child.on("error", reject);
    child.on("close", resolve);
  });
  if (code !== 0) {
    throw new Error(`prisma migrate deploy failed (exit ${code}):\n${Buffer.concat(output).toString("utf8")}`);
  }
}
