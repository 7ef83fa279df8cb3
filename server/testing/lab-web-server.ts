/**
 * A small web service for a lab machine, started over SSH the way a learner would start one
 * (`setsid -f`, listening on the machine's 127.0.0.1): the web preview's tests and bench talk to
 * it through the platform. Paths: `/headers` (the request's headers as JSON), `/size` (the
 * request body's byte count), `/bytes?n=N` (N bytes), `/set-cookie` (two cookies, one named like
 * the preview's grant), anything else a small page; a WebSocket upgrade echoes every message.
 */
import fs from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import type { SshExecPool } from "../ssh/exec";
import type { SshEndpoint } from "../ssh/connect";

const require = createRequire(import.meta.url);

const SERVER_SOURCE = (wsModule: string) => `
const http = require("node:http");
const { WebSocketServer } = require(${JSON.stringify(wsModule)});
const [port, name] = process.argv.slice(2);
const chunk = Buffer.alloc(64 * 1024, 120);
const server = http.createServer((req, res) => {
  const url = new URL(req.url, "http://x");
  if (url.pathname === "/headers") return res.end(JSON.stringify(req.headers));
  if (url.pathname === "/size") {
    let n = 0;
    req.on("data", (c) => (n += c.length));
    req.on("end", () => res.end(String(n)));
    return;
  }
  if (url.pathname === "/bytes") {
    let left = Number(url.searchParams.get("n"));
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": left });
    const more = () => {
      while (left > 0) {
        const piece = left >= chunk.length ? chunk : chunk.subarray(0, left);
        left -= piece.length;
        if (!res.write(piece)) return res.once("drain", more);
      }
      res.end();
    };
    return more();
  }
  if (url.pathname === "/set-cookie") {
    res.setHeader("set-cookie", ["labdeck-preview=forged; Path=/", "app=1; Path=/"]);
    return res.end("ok");
  }
  res.setHeader("content-type", "text/html; charset=utf-8");
  res.end("<!doctype html><title>" + name + "</title><p id=hello>hello from " + name + "</p>");
});
new WebSocketServer({ server }).on("connection", (ws) => ws.on("message", (data, binary) => ws.send(data, { binary })));
server.listen(Number(port), "127.0.0.1");
`;

/** Starts the service on the machine; returns a function that stops it. */
export async function startLabWebServer(pool: SshExecPool, endpoint: SshEndpoint, port: number): Promise<() => Promise<void>> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "labdeck-web-"));
  await fs.chmod(dir, 0o755);
  const file = path.join(dir, "server.js");
  await fs.writeFile(file, SERVER_SOURCE(require.resolve("ws")));
  const pidFile = path.join(dir, "pid");
  const started = await pool.run(
    endpoint,
    `setsid -f /bin/sh -c 'echo $$ > ${pidFile}; exec ${process.execPath} ${file} ${port} ${endpoint.name}' >/dev/null 2>&1
     for i in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/${port}) 2>/dev/null && exit 0; sleep 0.05; done; echo not listening; exit 1`,
    20,
  );
  if (started.outcome !== "pass") throw new Error(`lab web server on ${endpoint.name}:${port}: ${started.output}`);
  return async () => {
    const pid = Number(await fs.readFile(pidFile, "utf8").catch(() => "0"));
    if (pid > 0) {
      try {
        process.kill(pid, "SIGTERM");
      } catch {
        // already gone
      }
    }
    await fs.rm(dir, { recursive: true, force: true });
  };
}
