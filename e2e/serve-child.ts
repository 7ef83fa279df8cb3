/**
 * e2e/serve.ts as a child process, for runs Playwright's webServer does not start (the browser
 * bench, the Firefox test): resolves once the app listens and its first admin's login is kept
 * (adminLoginFile), so accounts.ts can make users; stop() ends it and waits (it removes its hosts).
 */
import { spawn } from "node:child_process";
import fs from "node:fs/promises";
import { freePort } from "../server/testing/stack";
import { adminLoginFile } from "./accounts";

/** How long the app may take to start (netns hosts, embedded PostgreSQL, server.ts), ms. */
const SERVE_START_MS = 180_000;

export interface ServedApp {
  baseURL: string;
  stop(): Promise<void>;
}

export async function serveChild(options: { subnet?: number; env?: Record<string, string> } = {}): Promise<ServedApp> {
  const port = await freePort();
  const args = ["--import", "tsx", "e2e/serve.ts", "--port", String(port), ...(options.subnet ? ["--subnet", String(options.subnet)] : [])];
  const serve = spawn(process.execPath, args, { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, ...options.env } });
  const stop = async () => {
    if (serve.exitCode !== null || serve.signalCode !== null) return;
    serve.kill("SIGTERM");
    await new Promise((r) => serve.once("exit", r));
  };
  try {
    for (const deadline = Date.now() + SERVE_START_MS; ;) {
      if (await fs.stat(adminLoginFile(port)).catch(() => null)) break;
      if (serve.exitCode !== null) throw new Error(`e2e/serve.ts exited with ${serve.exitCode}`);
      if (Date.now() > deadline) throw new Error(`the app did not start within ${SERVE_START_MS / 1000} s`);
      await new Promise((r) => setTimeout(r, 300));
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { baseURL: `http://127.0.0.1:${port}`, stop };
}
