/**
 * Starts server/testing/gateway-process.ts (the production terminal registry and gateway, one OS
 * process) for tests and benches that kill a server process or run several on one database.
 */
import { spawn, type ChildProcess } from "node:child_process";

export interface GatewayProcess {
  child: ChildProcess;
  port: number;
  /** performance.now() when it printed that it listens. */
  listeningAt: number;
}

/** Starts a gateway process on 127.0.0.1:`port` over the database at `databaseUrl`; resolves once it listens. */
export function spawnGateway(options: { databaseUrl: string; secret: Buffer; port: number; logLevel?: string }): Promise<GatewayProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "server/testing/gateway-process.ts"], {
    env: {
      ...process.env,
      DATABASE_URL: options.databaseUrl,
      LABDECK_TEST_SECRET: options.secret.toString("hex"),
      PORT: String(options.port),
      LOG_LEVEL: options.logLevel ?? "warn",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
      if (out.includes("GATEWAY LISTENING")) resolve({ child, port: options.port, listeningAt: performance.now() });
    });
    child.once("exit", (code) => reject(new Error(`gateway process exited (${code}) before listening: ${out}`)));
  });
}

/** kill -9, resolved once the process is gone. */
export async function kill9(gateway: GatewayProcess): Promise<void> {
  if (gateway.child.exitCode !== null || gateway.child.signalCode !== null) return;
  const exited = new Promise((r) => gateway.child.once("exit", r));
  gateway.child.kill("SIGKILL");
  await exited;
}
